// Command loadgen is kafka-wire's benchmark load for many connections and many consumer groups
// from one process (bench/fanout.py runs it): compiled, no Python per message.
//
//	loadgen produce -brokers HOST:PORT -topic T -connections N -records R -size S [-acks 1|-1]
//	loadgen groups  -brokers HOST:PORT -topic T -groups G -records R
//
// produce opens N franz-go clients (one producing connection each), has each send one record
// synchronously so that its connections exist, prints "ready", waits for "go" on stdin, then
// the clients send R records of S bytes between them at once (linger 5 ms, 5 requests in flight
// per connection, no compression, no idempotence, like bench/tools.py's rdkafka_performance).
//
// groups opens G clients, each the only member of its own consumer group on topic T, reading
// from the start; after "go" all subscribe at once and each reads R records. It reports when
// the last group got its assignment and when the last one had read R records.
//
// Both print one JSON line: {"start","end","messages","bytes",...} with times in seconds since
// "go" (bench/fanout.py only takes differences). produce also counts the Produce requests its
// clients wrote after "go" ("produce_requests"): with the broker's CPU time, requests per core.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: loadgen produce|groups [flags]"))
	}
	raiseFileLimit()
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flags.String("topic", "", "topic")
	connections := flags.Int("connections", 1, "produce: producer clients (one producing connection each)")
	groups := flags.Int("groups", 1, "groups: consumer groups (one member each)")
	records := flags.Int("records", 10000, "produce: records in all; groups: records each group reads")
	size := flags.Int("size", 1024, "produce: record value bytes")
	acks := flags.Int("acks", 1, "produce: 1 or -1")
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
		result, err = consume(ctx, *brokers, *topic, *groups, *records)
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

func consume(ctx context.Context, brokers, topic string, groups, records int) (map[string]any, error) {
	var assignedAt sync.Map
	var start time.Time
	clients, err := openClients(groups, func(i int) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(brokers), kgo.ConsumerGroup(fmt.Sprintf("%s-group-%d", topic, i)),
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
