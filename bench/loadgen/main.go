// Command loadgen is kafka-wire's benchmark load for many connections, many consumer groups and
// latency at a fixed rate from one process (bench/fanout.py, bench/scaling.py run it): compiled,
// no Python per message.
//
//	loadgen produce -brokers HOST:PORT -topic T -connections N -records R -size S [-acks 1|-1]
//	loadgen groups  -brokers HOST:PORT -topic T -groups G -records R [-group-prefix P]
//	loadgen latency -brokers HOST:PORT -topic T -rate N -seconds D -size S [-warmup W]
//	loadgen share   -brokers HOST:PORT -topic T -group G -consumers N -records R
//	loadgen share-latency -brokers HOST:PORT -topic T -group G -consumers N -rate X -seconds D -size S [-warmup W]
//
// produce opens N franz-go clients (one producing connection each), has each send one record
// synchronously so that its connections exist, prints "ready", waits for "go" on stdin, then
// the clients send R records of S bytes between them at once (linger 5 ms, 5 requests in flight
// per connection, no compression, no idempotence, like bench/tools.py's rdkafka_performance).
//
// groups opens G clients, each the only member of its own consumer group on topic T, reading
// from the start; after "go" all subscribe at once and each reads R records. It reports when
// the last group got its assignment and when the last one had read R records. Groups are named
// P-group-0 .. P-group-(G-1), P being the topic unless -group-prefix says otherwise (several
// loadgen processes reading one topic give each its own prefix).
//
// latency (bench/scaling.py) opens a producer client (acks=1, linger 0, no idempotence) and a
// consumer client reading every partition of T from the start (no group), sends one record and
// waits until the consumer has it, prints "ready", waits for "go", then produces N records/s of S
// bytes for D seconds, paced in 1 ms steps, each record carrying its send time (wall clock, ns).
// It reports every record's end-to-end latency (send to receipt by the consumer) and produce
// latency (send to acknowledgement), in microseconds, of the records sent after the first W.
//
// share and share-latency (bench/share.py) are share-group consumers: see share.go.
//
// All print one JSON line: {"start","end","messages","bytes",...} with times in seconds since
// "go" (bench/fanout.py only takes differences). produce also counts the Produce requests its
// clients wrote after "go" ("produce_requests"): with the broker's CPU time, requests per core.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: loadgen produce|groups|latency|share|share-latency [flags]"))
	}
	raiseFileLimit()
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flags.String("topic", "", "topic")
	connections := flags.Int("connections", 1, "produce: producer clients (one producing connection each)")
	groups := flags.Int("groups", 1, "groups: consumer groups (one member each)")
	records := flags.Int("records", 10000, "produce: records in all; groups: records each group reads")
	size := flags.Int("size", 1024, "produce, latency: record value bytes")
	acks := flags.Int("acks", 1, "produce: 1 or -1")
	group := flags.String("group", "", "share, share-latency: the share group")
	consumers := flags.Int("consumers", 1, "share, share-latency: share consumers (one client each)")
	groupPrefix := flags.String("group-prefix", "", "groups: group names start with this (default: the topic)")
	rate := flags.Int("rate", 1000, "latency: records per second")
	seconds := flags.Duration("seconds", 5*time.Second, "latency: how long to produce")
	warmup := flags.Duration("warmup", time.Second, "latency: records sent in this first stretch are not measured")
	timeout := flags.Duration("timeout", 10*time.Minute, "give up after this long")
	_ = flags.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var result map[string]any
	var err error
	switch os.Args[1] {
	case "produce":
		result, err = produce(ctx, *brokers, *topic, *connections, *records, *size, *acks)
	case "groups":
		prefix := *groupPrefix
		if prefix == "" {
			prefix = *topic
		}
		result, err = consume(ctx, *brokers, *topic, prefix, *groups, *records)
	case "latency":
		result, err = latency(ctx, *brokers, *topic, *rate, *seconds, *warmup, *size)
	case "share":
		result, err = shareThroughput(ctx, *brokers, *topic, *group, *consumers, *records)
	case "share-latency":
		result, err = shareLatency(ctx, *brokers, *topic, *group, *consumers, *rate, *seconds, *warmup, *size)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}

func fail(err error) {
	out, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Println(string(out))
	os.Exit(1)
}

// raiseFileLimit sets RLIMIT_NOFILE's soft limit to the hard limit: 1,000 clients hold 2-3
// sockets each (a seed connection, the broker's general one, the producing one).
func raiseFileLimit() {
	var limit syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit) == nil && limit.Cur < limit.Max {
		limit.Cur = limit.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit)
	}
}

// readyThenWaitForGo lets bench/fanout.py start the clock (and read the broker's CPU time) only
// once every client is connected.
func readyThenWaitForGo() error {
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || line != "go\n" {
		return fmt.Errorf("expected go on stdin, got %q (%v)", line, err)
	}
	return nil
}

func openClients(n int, opts func(i int) []kgo.Opt) ([]*kgo.Client, error) {
	clients := make([]*kgo.Client, n)
	for i := range clients {
		cl, err := kgo.NewClient(opts(i)...)
		if err != nil {
			closeAll(clients[:i])
			return nil, err
		}
		clients[i] = cl
	}
	return clients, nil
}

func closeAll(clients []*kgo.Client) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *kgo.Client) { defer wg.Done(); cl.Close() }(cl)
	}
	wg.Wait()
}

// parallel runs f(i) for i in [0, n) on at most `limit` goroutines at a time; the first error
// wins.
func parallel(n, limit int, f func(i int) error) error {
	var wg sync.WaitGroup
	var first atomic.Value
	slots := make(chan struct{}, limit)
	for i := 0; i < n; i++ {
		wg.Add(1)
		slots <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			if err := f(i); err != nil {
				first.CompareAndSwap(nil, err)
			}
		}(i)
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

// produceRequests counts the Produce requests (API key 0) written to brokers once counting is on.
type produceRequests struct {
	counting atomic.Bool
	written  atomic.Int64
}

func (p *produceRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil && p.counting.Load() {
		p.written.Add(1)
	}
}

func produce(ctx context.Context, brokers, topic string, connections, records, size, acks int) (map[string]any, error) {
	ack := kgo.LeaderAck()
	if acks == -1 {
		ack = kgo.AllISRAcks()
	}
	// Buffered records per client: a bound on the load process's memory with 1,000 clients.
	buffered := records / connections
	if buffered > 10000 {
		buffered = 10000
	}
	if buffered < 100 {
		buffered = 100
	}
	requests := &produceRequests{}
	clients, err := openClients(connections, func(int) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(brokers), kgo.WithHooks(requests), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(ack),
			kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5),
			kgo.ProducerLinger(5 * time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(buffered),
			kgo.RecordDeliveryTimeout(2 * time.Minute)}
	})
	if err != nil {
		return nil, err
	}
	defer closeAll(clients)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i * 7)
	}
	// 64 at a time: connecting 1,000 clients at once would only queue in the accept backlog.
	if err := parallel(connections, 64, func(i int) error {
		return clients[i].ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
	}); err != nil {
		return nil, fmt.Errorf("first record: %w", err)
	}
	if err := readyThenWaitForGo(); err != nil {
		return nil, err
	}
	start := time.Now()
	requests.counting.Store(true)
	var delivered, failed atomic.Int64
	var firstErr atomic.Value
	var done sync.WaitGroup
	for c, cl := range clients {
		count := records / connections
		if c < records%connections {
			count++
		}
		done.Add(count)
		go func(cl *kgo.Client, count int) {
			for j := 0; j < count; j++ {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					} else {
						delivered.Add(1)
					}
					done.Done()
				})
			}
		}(cl, count)
	}
	done.Wait()
	seconds := time.Since(start).Seconds()
	result := map[string]any{"start": 0.0, "end": seconds, "messages": delivered.Load(),
		"bytes": delivered.Load() * int64(size), "error_count": failed.Load(), "connections": connections,
		"produce_requests": requests.written.Load()}
	if err, ok := firstErr.Load().(error); ok {
		result["errors"] = []string{err.Error()}
	}
	return result, nil
}

func consume(ctx context.Context, brokers, topic, prefix string, groups, records int) (map[string]any, error) {
	var assignedAt sync.Map
	var start time.Time
	clients, err := openClients(groups, func(i int) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(brokers), kgo.ConsumerGroup(fmt.Sprintf("%s-group-%d", prefix, i)),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				assignedAt.LoadOrStore(i, time.Since(start).Seconds())
			})}
	})
	if err != nil {
		return nil, err
	}
	defer closeAll(clients)
	// Connected (a Metadata request each) before the clock starts; the group joins after "go".
	if err := parallel(groups, 64, func(i int) error { return clients[i].Ping(ctx) }); err != nil {
		return nil, fmt.Errorf("ping: %w", err)
	}
	if err := readyThenWaitForGo(); err != nil {
		return nil, err
	}
	start = time.Now()
	for _, cl := range clients {
		cl.AddConsumeTopics(topic)
	}
	var messages, nbytes atomic.Int64
	readAll := make([]float64, groups)
	err = parallel(groups, groups, func(i int) error { // every group polls at once
		got := 0
		for got < records {
			fetches := clients[i].PollFetches(ctx)
			if ctx.Err() != nil {
				return fmt.Errorf("group %d read %d of %d records: %w", i, got, records, ctx.Err())
			}
			for _, e := range fetches.Errors() {
				return fmt.Errorf("group %d: %s[%d]: %w", i, e.Topic, e.Partition, e.Err)
			}
			fetches.EachRecord(func(r *kgo.Record) {
				got++
				messages.Add(1)
				nbytes.Add(int64(len(r.Value)))
			})
		}
		readAll[i] = time.Since(start).Seconds()
		return nil
	})
	if err != nil {
		return nil, err
	}
	seconds := time.Since(start).Seconds()
	lastAssigned := 0.0
	assignedAt.Range(func(_, v any) bool {
		if v.(float64) > lastAssigned {
			lastAssigned = v.(float64)
		}
		return true
	})
	firstDone := seconds
	for _, t := range readAll {
		if t < firstDone {
			firstDone = t
		}
	}
	return map[string]any{"start": 0.0, "end": seconds, "messages": messages.Load(), "bytes": nbytes.Load(),
		"groups": groups, "last_assigned": lastAssigned, "first_group_done": firstDone}, nil
}

// latencies collects microsecond samples from several goroutines (franz-go calls produce
// promises from its own).
type latencies struct {
	mu      sync.Mutex
	samples []int64
}

func (l *latencies) add(us int64) {
	l.mu.Lock()
	l.samples = append(l.samples, us)
	l.mu.Unlock()
}

func (l *latencies) snapshot() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(make([]int64, 0, len(l.samples)), l.samples...)
}

// pacedProducer: the producer of the latency modes, each record sent at once (no linger, no
// compression, acks=1), its send time in the value.
func pacedProducer(brokers, topic string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(2*time.Minute))
}

// stampedValue: a record value of `size` bytes (at least 8) starting with the send time in
// nanoseconds, the rest a fixed pattern.
func stampedValue(size int) []byte {
	value := make([]byte, size)
	for i := 8; i < size; i++ {
		value[i] = byte(i * 7)
	}
	binary.BigEndian.PutUint64(value, uint64(time.Now().UnixNano()))
	return value
}

// pacedResult: what pacedSend did.
type pacedResult struct {
	sent      int     // records handed to the producer
	producing float64 // seconds from start until the last was handed over
	failed    int64   // sends that failed
	firstErr  error   // the first of those failures, or nil
}

// pacedSend produces `rate` records a second from `start` until `total` are sent (or ctx ends),
// each value from value(), calling delivered(r) for each acknowledged record, then flushes.
func pacedSend(ctx context.Context, producer *kgo.Client, rate, total int, start time.Time, value func() []byte,
	delivered func(*kgo.Record)) (pacedResult, error) {
	var failed atomic.Int64
	var firstErr atomic.Value
	sent := 0
	for sent < total && ctx.Err() == nil {
		due := int(time.Since(start).Seconds()*float64(rate)) + 1
		if due > total {
			due = total
		}
		for ; sent < due; sent++ {
			producer.Produce(ctx, &kgo.Record{Value: value()}, func(r *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				delivered(r)
			})
		}
		time.Sleep(time.Millisecond)
	}
	result := pacedResult{sent: sent, producing: time.Since(start).Seconds()}
	if err := producer.Flush(ctx); err != nil {
		return result, fmt.Errorf("flush: %w", err)
	}
	result.failed = failed.Load()
	if err, ok := firstErr.Load().(error); ok {
		result.firstErr = err
	}
	return result, nil
}

func latency(ctx context.Context, brokers, topic string, rate int, seconds, warmup time.Duration, size int) (map[string]any, error) {
	if size < 8 {
		return nil, fmt.Errorf("latency: -size must be at least 8 (the send time)")
	}
	producer, err := pacedProducer(brokers, topic)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer consumer.Close()

	// Send times at or after startNs belong to the measurement (counted until all have arrived);
	// at or after measureFromNs, past the warm-up, their latencies are kept.
	var startNs, measureFromNs atomic.Int64
	startNs.Store(math.MaxInt64)
	measureFromNs.Store(math.MaxInt64)
	var received atomic.Int64
	firstRecord := make(chan struct{})
	var firstOnce sync.Once
	endToEnd := &latencies{}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polling := make(chan error, 1)
	go func() {
		for {
			fetches := consumer.PollFetches(pollCtx)
			if pollCtx.Err() != nil {
				polling <- nil
				return
			}
			for _, e := range fetches.Errors() {
				polling <- fmt.Errorf("consumer: %s[%d]: %w", e.Topic, e.Partition, e.Err)
				return
			}
			now := time.Now().UnixNano()
			fetches.EachRecord(func(r *kgo.Record) {
				firstOnce.Do(func() { close(firstRecord) })
				if len(r.Value) < 8 {
					return
				}
				sent := int64(binary.BigEndian.Uint64(r.Value))
				if sent >= startNs.Load() {
					received.Add(1)
				}
				if sent >= measureFromNs.Load() {
					endToEnd.add((now - sent) / 1000)
				}
			})
		}
	}()
	defer func() { stopPolling(); <-polling }()

	stamped := func() []byte { return stampedValue(size) }
	// Both clients connected, and the consumer fetching the topic, before the clock starts.
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: stamped()}).FirstErr(); err != nil {
		return nil, fmt.Errorf("first record: %w", err)
	}
	select {
	case <-firstRecord:
	case err := <-polling:
		polling <- err
		return nil, fmt.Errorf("waiting for the first record: %v", err)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the first record: %w", ctx.Err())
	}
	if err := readyThenWaitForGo(); err != nil {
		return nil, err
	}
	start := time.Now()
	startNs.Store(start.UnixNano())
	measureFromNs.Store(start.Add(warmup).UnixNano())
	total := int(float64(rate) * seconds.Seconds())
	acked := &latencies{}
	var delivered atomic.Int64
	paced, err := pacedSend(ctx, producer, rate, total, start, stamped, func(r *kgo.Record) {
		delivered.Add(1)
		sentNs := int64(binary.BigEndian.Uint64(r.Value))
		if sentNs >= measureFromNs.Load() {
			acked.add((time.Now().UnixNano() - sentNs) / 1000)
		}
	})
	if err != nil {
		return nil, err
	}
	sent, producing, failed := paced.sent, paced.producing, paced.failed
	for received.Load() < delivered.Load() {
		select {
		case err := <-polling:
			polling <- err
			return nil, fmt.Errorf("received %d of %d records: %v", received.Load(), delivered.Load(), err)
		case <-ctx.Done():
			return nil, fmt.Errorf("received %d of %d records: %w", received.Load(), delivered.Load(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	result := map[string]any{"start": 0.0, "end": time.Since(start).Seconds(), "producing": producing,
		"messages": delivered.Load(), "bytes": delivered.Load() * int64(size), "error_count": failed,
		"rate": float64(sent) / producing, "e2e_us": endToEnd.snapshot(), "ack_us": acked.snapshot()}
	if paced.firstErr != nil {
		result["errors"] = []string{paced.firstErr.Error()}
	}
	return result, nil
}
