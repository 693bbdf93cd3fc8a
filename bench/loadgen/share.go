// Share-group (KIP-932) load for bench/share.py: N franz-go share consumers of one group on one
// partition, every record acknowledged ACCEPT, and the broker asked afterwards whether the
// group's start offset moved past every record.
//
//	loadgen share         -brokers HOST:PORT -topic T -group G -consumers N -records R
//	loadgen share-latency -brokers HOST:PORT -topic T -group G -consumers N -rate X -seconds D -size S [-warmup W]
//
// share: T's partition 0 holds R records at offsets 0..R-1. The group gets
// share.auto.offset.reset=earliest (IncrementalAlterConfigs), "ready" is printed; after "go" the
// N clients join the group at once and poll, marking every record they get AckAccept; when the N
// clients together have been delivered all R offsets, each flushes its acknowledgements
// (FlushAcks) and the clock stops. Reported: "end" (go -> every ack answered), "first" (go -> the
// first record delivered), deliveries and duplicates (an offset delivered twice), ack errors.
//
// share-latency: the N clients join first, and a sentinel record is produced every 20 ms until
// each of them has been delivered one (or 30 s passed; "warm" says how many had); then "ready",
// and after "go" a producer (acks=1, linger 0) sends X records/s of S bytes for D seconds, each
// carrying its send time (wall clock, ns), while the consumers poll and accept. Reported: the
// delivery latency (send -> returned by PollFetches) in microseconds of every record sent after
// W, and the counts.
//
// Both end by asking the broker (DescribeShareGroupOffsets v1, until it says so or 60 s passed)
// for the group's start offset of the partition and its lag: every record was accepted when the
// start offset is the partition's end offset or the lag is 0. "accepted_through" and "lag" are
// what it said, "end_offset" the partition's end.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsSeen records which offsets of the partition were delivered, from many goroutines.
type offsetsSeen struct {
	mu       sync.Mutex
	seen     map[int64]struct{}
	dupes    int64
	delivers int64
}

// add returns whether the offset is new.
func (o *offsetsSeen) add(offset int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delivers++
	if _, ok := o.seen[offset]; ok {
		o.dupes++
		return false
	}
	o.seen[offset] = struct{}{}
	return true
}

func (o *offsetsSeen) counts() (unique, delivers, dupes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return int64(len(o.seen)), o.delivers, o.dupes
}

// shareAdmin sets the group's configs and reads its start offset.
type shareAdmin struct {
	cl           *kgo.Client
	group, topic string
}

func (a shareAdmin) setEarliest(ctx context.Context) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = a.group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = "share.auto.offset.reset"
	cfg.Op = 0 // SET
	cfg.Value = kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs: %w", err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("IncrementalAlterConfigs %s: %w", a.group, err)
		}
	}
	return nil
}

// startOffset asks DescribeShareGroupOffsets for the group's start offset of partition 0 and its
// lag (v1: the records from the start offset to the high watermark not yet in a final state,
// acknowledged or archived) until the start offset is `want` or the lag 0, or 60 s passed; it returns
// the last answer (-1: none yet). Kafka 4.3.0 can keep the persisted start offset before a last
// stretch of accepted records (the state batch says they are acknowledged) and report lag 0.
func (a shareAdmin) startOffset(ctx context.Context, want int64) (start, lag int64, err error) {
	deadline := time.Now().Add(60 * time.Second)
	start, lag = -1, -1
	for {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = a.group
		t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		t.Topic = a.topic
		t.Partitions = []int32{0}
		g.Topics = append(g.Topics, t)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, a.cl)
		if err != nil {
			return start, lag, fmt.Errorf("DescribeShareGroupOffsets: %w", err)
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return start, lag, fmt.Errorf("DescribeShareGroupOffsets %s: %w", a.group, err)
			}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return start, lag, fmt.Errorf("DescribeShareGroupOffsets %s[%d]: %w", t.Topic, p.Partition, err)
					}
					start, lag = p.StartOffset, p.Lag
				}
			}
		}
		if start == want || lag == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return start, lag, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shareMembers are N share consumers of one group polling at once, each accepting what it gets.
type shareMembers struct {
	clients   []*kgo.Client
	seen      *offsetsSeen
	ackErrors atomic.Int64
	firstErr  atomic.Value
	// onRecord runs for every record delivered (on the polling goroutine) with its delivery time.
	onRecord func(member int, r *kgo.Record, now time.Time)
}

func openShareMembers(brokers, topic, group string, n int) (*shareMembers, error) {
	m := &shareMembers{seen: &offsetsSeen{seen: make(map[int64]struct{})}}
	clients, err := openClients(n, func(int) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
			kgo.FetchMaxWait(500 * time.Millisecond),
			kgo.ShareAckCallback(func(_ *kgo.Client, results kgo.ShareAckResults) {
				for _, r := range results {
					if r.Err != nil {
						m.ackErrors.Add(1)
						m.firstErr.CompareAndSwap(nil, fmt.Errorf("ack %s[%d]: %w", r.Topic, r.Partition, r.Err))
					}
				}
			})}
	})
	if err != nil {
		return nil, err
	}
	m.clients = clients
	return m, nil
}

// poll runs every member's poll loop until ctx ends; each delivered record is marked AckAccept
// right after its poll (franz-go sends the acks with the next ShareFetch, or on FlushAcks).
func (m *shareMembers) poll(ctx context.Context) <-chan error {
	done := make(chan error, len(m.clients))
	for i, cl := range m.clients {
		go func(i int, cl *kgo.Client) {
			for {
				fetches := cl.PollFetches(ctx)
				now := time.Now()
				if ctx.Err() != nil {
					cl.MarkAcks(kgo.AckAccept)
					done <- nil
					return
				}
				for _, e := range fetches.Errors() {
					if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
						continue
					}
					done <- fmt.Errorf("consumer %d: %s[%d]: %w", i, e.Topic, e.Partition, e.Err)
					return
				}
				fetches.EachRecord(func(r *kgo.Record) {
					if m.onRecord != nil {
						m.onRecord(i, r, now)
					}
				})
				cl.MarkAcks(kgo.AckAccept)
			}
		}(i, cl)
	}
	return done
}

// finish waits for every poll loop, then flushes every member's acknowledgements.
func (m *shareMembers) finish(ctx context.Context, done <-chan error) error {
	var first error
	for range m.clients {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	return parallel(len(m.clients), len(m.clients), func(i int) error {
		if err := m.clients[i].FlushAcks(ctx); err != nil {
			return fmt.Errorf("consumer %d: FlushAcks: %w", i, err)
		}
		return nil
	})
}

func (m *shareMembers) report(result map[string]any) {
	unique, delivers, dupes := m.seen.counts()
	result["delivered_offsets"] = unique
	result["deliveries"] = delivers
	result["duplicates"] = dupes
	result["ack_error_count"] = m.ackErrors.Load()
	if err, ok := m.firstErr.Load().(error); ok {
		result["errors"] = []string{err.Error()}
	}
}

func shareThroughput(ctx context.Context, brokers, topic, group string, consumers, records int) (map[string]any, error) {
	adminClient, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return nil, err
	}
	defer adminClient.Close()
	admin := shareAdmin{adminClient, group, topic}
	if err := admin.setEarliest(ctx); err != nil {
		return nil, err
	}
	if err := readyThenWaitForGo(); err != nil {
		return nil, err
	}
	start := time.Now()
	members, err := openShareMembers(brokers, topic, group, consumers)
	if err != nil {
		return nil, err
	}
	defer closeAll(members.clients)
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	var firstAt atomic.Int64
	var valueBytes atomic.Int64
	members.onRecord = func(_ int, r *kgo.Record, now time.Time) {
		firstAt.CompareAndSwap(0, int64(now.Sub(start)))
		if members.seen.add(r.Offset) {
			valueBytes.Add(int64(len(r.Value)))
			if unique, _, _ := members.seen.counts(); unique >= int64(records) {
				stop()
			}
		}
	}
	if err := members.finish(ctx, members.poll(pollCtx)); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		unique, _, _ := members.seen.counts()
		return nil, fmt.Errorf("%d of %d records delivered: %w", unique, records, ctx.Err())
	}
	seconds := time.Since(start).Seconds()
	accepted, lag, err := admin.startOffset(ctx, int64(records))
	if err != nil {
		return nil, err
	}
	unique, _, _ := members.seen.counts()
	result := map[string]any{"start": 0.0, "end": seconds, "first": time.Duration(firstAt.Load()).Seconds(),
		"messages": unique, "bytes": valueBytes.Load(), "consumers": consumers,
		"accepted_through": accepted, "lag": lag, "end_offset": records}
	members.report(result)
	return result, nil
}

func shareLatency(ctx context.Context, brokers, topic, group string, consumers, rate int, seconds, warmup time.Duration, size int) (map[string]any, error) {
	if size < 8 {
		return nil, fmt.Errorf("share-latency: -size must be at least 8 (the send time)")
	}
	producer, err := pacedProducer(brokers, topic)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	admin := shareAdmin{producer, group, topic}
	if err := admin.setEarliest(ctx); err != nil {
		return nil, err
	}
	members, err := openShareMembers(brokers, topic, group, consumers)
	if err != nil {
		return nil, err
	}
	defer closeAll(members.clients)

	// Sentinels are 7-byte records; measured records carry their send time in 8+ bytes.
	var startNs, measureFromNs atomic.Int64
	startNs.Store(1<<63 - 1)
	measureFromNs.Store(1<<63 - 1)
	warm := make([]atomic.Bool, consumers)
	var received atomic.Int64
	delivery := &latencies{}
	members.onRecord = func(member int, r *kgo.Record, now time.Time) {
		warm[member].Store(true)
		if !members.seen.add(r.Offset) || len(r.Value) < 8 {
			return
		}
		sent := int64(binary.BigEndian.Uint64(r.Value))
		if sent >= startNs.Load() {
			received.Add(1)
		}
		if sent >= measureFromNs.Load() {
			delivery.add((now.UnixNano() - sent) / 1000)
		}
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	polling := members.poll(pollCtx)
	failed := func() error {
		select {
		case err := <-polling:
			if err == nil {
				err = errors.New("a consumer stopped polling")
			}
			return err
		default:
			return nil
		}
	}
	countWarm := func() int {
		n := 0
		for i := range warm {
			if warm[i].Load() {
				n++
			}
		}
		return n
	}
	sentinel := []byte("warm-up")
	var lastOffset atomic.Int64
	lastOffset.Store(-1)
	noteOffset := func(r *kgo.Record) {
		for {
			old := lastOffset.Load()
			if r.Offset <= old || lastOffset.CompareAndSwap(old, r.Offset) {
				return
			}
		}
	}
	warmUntil := time.Now().Add(30 * time.Second)
	for countWarm() < consumers && time.Now().Before(warmUntil) {
		r := &kgo.Record{Value: sentinel}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, fmt.Errorf("sentinel: %w", err)
		}
		noteOffset(r)
		if err := failed(); err != nil {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	warmCount := countWarm()
	if warmCount == 0 {
		return nil, fmt.Errorf("no consumer was delivered a record in 30 s")
	}
	if err := readyThenWaitForGo(); err != nil {
		return nil, err
	}
	start := time.Now()
	startNs.Store(start.UnixNano())
	measureFromNs.Store(start.Add(warmup).UnixNano())
	total := int(float64(rate) * seconds.Seconds())
	var delivered atomic.Int64
	paced, err := pacedSend(ctx, producer, rate, total, start, func() []byte { return stampedValue(size) }, func(r *kgo.Record) {
		delivered.Add(1)
		noteOffset(r)
	})
	if err != nil {
		return nil, err
	}
	sent, producing := paced.sent, paced.producing
	for received.Load() < delivered.Load() {
		if err := failed(); err != nil {
			return nil, fmt.Errorf("received %d of %d records: %w", received.Load(), delivered.Load(), err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("received %d of %d records: %w", received.Load(), delivered.Load(), ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	stopPolling()
	if err := members.finish(ctx, polling); err != nil {
		return nil, err
	}
	end := time.Since(start).Seconds()
	accepted, lag, err := admin.startOffset(ctx, lastOffset.Load()+1)
	if err != nil {
		return nil, err
	}
	result := map[string]any{"start": 0.0, "end": end, "producing": producing, "messages": received.Load(),
		"produced": delivered.Load(), "bytes": received.Load() * int64(size), "error_count": paced.failed,
		"rate": float64(sent) / producing, "consumers": consumers, "warm": warmCount,
		"delivery_us": delivery.snapshot(), "accepted_through": accepted, "lag": lag, "end_offset": lastOffset.Load() + 1}
	members.report(result)
	if paced.firstErr != nil {
		result["errors"] = []string{paced.firstErr.Error()}
	}
	return result, nil
}
