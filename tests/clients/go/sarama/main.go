// Sarama (Debian's golang-github-shopify-sarama-dev), unmodified, against an Odradek broker.
// Built in GOPATH mode by tests/integration/test_other_clients.py and run as
//
//	sarama-client <command> '<json arguments>'
//
// Each command prints one JSON object on stdout and exits 0, or prints the error on stderr and
// exits 1. "version" is the Kafka version Sarama is told to speak ("" = Sarama's default, 0.8.2,
// which means Produce/Fetch v0 and magic-0 message sets). Commands:
//
//	produce    {brokers, topic, version, codec, count, partitions, idempotent}  sync producer
//	consume    {brokers, topic, version, partitions, count}  partition consumers from offset 0
//	group      {brokers, topic, version, group, count}  consumer group member; marks and commits
//	admin      {brokers, topic, version, group, groupTopic}  create, list, describe, configs, partitions,
//	           delete records, delete topic
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type args struct {
	Brokers    []string `json:"brokers"`
	Topic      string   `json:"topic"`
	Version    string   `json:"version"`
	Codec      string   `json:"codec"`
	Count      int      `json:"count"`
	Partitions int      `json:"partitions"`
	Idempotent bool     `json:"idempotent"`
	Group      string   `json:"group"`
	GroupTopic string   `json:"groupTopic"`
	TimeoutMs  int      `json:"timeoutMs"`
	ClientID   string   `json:"clientId"`
}

type message struct {
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Timestamp int64             `json:"timestamp"`
	Headers   map[string]string `json:"headers"`
}

var codecs = map[string]sarama.CompressionCodec{
	"": sarama.CompressionNone, "none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func config(a *args) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "odradek-sarama"
	if a.ClientID != "" {
		c.ClientID = a.ClientID
	}
	if a.Version != "" {
		v, err := sarama.ParseKafkaVersion(a.Version)
		if err != nil {
			log.Fatal(err)
		}
		c.Version = v
	}
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	return c
}

func strp(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func produce(a *args) (interface{}, error) {
	c := config(a)
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Compression = codecs[a.Codec]
	if a.Idempotent {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
	p, err := sarama.NewSyncProducer(a.Brokers, c)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	parts := a.Partitions
	if parts == 0 {
		parts = 1
	}
	var msgs []*sarama.ProducerMessage
	var sent []message
	for i := 0; i < a.Count; i++ {
		m := &sarama.ProducerMessage{
			Topic:     a.Topic,
			Partition: int32(i % parts),
			Timestamp: time.Unix(0, (1700000000000+int64(i))*int64(time.Millisecond)),
		}
		s := message{Partition: m.Partition, Timestamp: 1700000000000 + int64(i), Headers: map[string]string{}}
		if i%7 != 0 {
			k := fmt.Sprintf("key-%d", i)
			m.Key, s.Key = sarama.StringEncoder(k), &k
		}
		if i%11 != 0 {
			v := fmt.Sprintf("value-%d-%d", i, i*i)
			m.Value, s.Value = sarama.StringEncoder(v), &v
		}
		if i%3 == 0 && c.Version.IsAtLeast(sarama.V0_11_0_0) {
			m.Headers = []sarama.RecordHeader{{Key: []byte("h1"), Value: []byte("x")}}
			s.Headers["h1"] = "x"
		}
		msgs = append(msgs, m)
		sent = append(sent, s)
	}
	// Three calls, so that a producer sends more than one batch per partition.
	step := (len(msgs) + 2) / 3
	for start := 0; start < len(msgs); start += step {
		end := start + step
		if end > len(msgs) {
			end = len(msgs)
		}
		if err := p.SendMessages(msgs[start:end]); err != nil {
			if errs, ok := err.(sarama.ProducerErrors); ok && len(errs) > 0 {
				return nil, fmt.Errorf("%v; first: %v", err, errs[0].Err)
			}
			return nil, err
		}
	}
	for i, m := range msgs {
		sent[i].Offset = m.Offset
	}
	return map[string]interface{}{"sent": sent}, nil
}

func toMessage(m *sarama.ConsumerMessage) message {
	out := message{Partition: m.Partition, Offset: m.Offset, Key: strp(m.Key), Value: strp(m.Value),
		Headers: map[string]string{}}
	if !m.Timestamp.IsZero() {
		out.Timestamp = m.Timestamp.UnixNano() / int64(time.Millisecond)
	}
	for _, h := range m.Headers {
		out.Headers[string(h.Key)] = string(h.Value)
	}
	return out
}

func timeout(a *args) time.Duration {
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	return 30 * time.Second
}

func consume(a *args) (interface{}, error) {
	c := config(a)
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	consumer, err := sarama.NewConsumer(a.Brokers, c)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	out := make(chan *sarama.ConsumerMessage)
	errs := make(chan error, 16)
	parts := a.Partitions
	if parts == 0 {
		parts = 1
	}
	for p := 0; p < parts; p++ {
		pc, err := consumer.ConsumePartition(a.Topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		go func(pc sarama.PartitionConsumer) {
			for m := range pc.Messages() {
				out <- m
			}
		}(pc)
		go func(pc sarama.PartitionConsumer) {
			for e := range pc.Errors() {
				errs <- e
			}
		}(pc)
	}
	var got []message
	deadline := time.After(timeout(a))
	for len(got) < a.Count {
		select {
		case m := <-out:
			got = append(got, toMessage(m))
		case e := <-errs:
			return nil, e
		case <-deadline:
			return map[string]interface{}{"messages": got, "timedOut": true}, nil
		}
	}
	return map[string]interface{}{"messages": got}, nil
}

type handler struct {
	mu     sync.Mutex
	got    []message
	want   int
	done   chan struct{}
	once   sync.Once
	claims map[string][]int32
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	h.claims = s.Claims()
	h.mu.Unlock()
	return nil
}
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		if len(h.got) < h.want {
			h.got = append(h.got, toMessage(m))
			s.MarkMessage(m, "")
		}
		if len(h.got) >= h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

func group(a *args) (interface{}, error) {
	c := config(a)
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	g, err := sarama.NewConsumerGroup(a.Brokers, a.Group, c)
	if err != nil {
		return nil, err
	}
	h := &handler{want: a.Count, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var consumeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{a.Topic}, h); err != nil {
				consumeErr = err
				return
			}
		}
	}()
	go func() {
		for e := range g.Errors() {
			log.Printf("consumer group error: %v", e)
		}
	}()
	timedOut := false
	select {
	case <-h.done:
	case <-time.After(timeout(a)):
		timedOut = true
	}
	cancel()
	wg.Wait()
	// Closing the group commits the marked offsets and leaves the group.
	if err := g.Close(); err != nil {
		return nil, err
	}
	if consumeErr != nil {
		return nil, consumeErr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return map[string]interface{}{"messages": h.got, "claims": h.claims, "timedOut": timedOut}, nil
}

func admin(a *args) (interface{}, error) {
	c := config(a)
	adm, err := sarama.NewClusterAdmin(a.Brokers, c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	out := map[string]interface{}{}
	retention := "3600000"
	err = adm.CreateTopic(a.Topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	if err != nil {
		return nil, fmt.Errorf("create: %v", err)
	}
	err = adm.CreateTopic(a.Topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false)
	out["createAgainError"] = fmt.Sprint(err)

	topics, err := adm.ListTopics()
	if err != nil {
		return nil, fmt.Errorf("list: %v", err)
	}
	detail, ok := topics[a.Topic]
	out["listed"] = ok
	out["listedPartitions"] = detail.NumPartitions

	meta, err := adm.DescribeTopics([]string{a.Topic})
	if err != nil {
		return nil, fmt.Errorf("describe topics: %v", err)
	}
	var ids []int
	for _, p := range meta[0].Partitions {
		ids = append(ids, int(p.ID))
	}
	sort.Ints(ids)
	out["partitions"] = ids

	brokers, controller, err := adm.DescribeCluster()
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %v", err)
	}
	// Sarama sends Metadata v0 here, which has no controller id: controller is -1.
	out["brokers"] = len(brokers)
	out["controller"] = controller

	describe := func() (map[string]string, error) {
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: a.Topic})
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for _, e := range entries {
			m[e.Name] = e.Value
		}
		return m, nil
	}
	before, err := describe()
	if err != nil {
		return nil, fmt.Errorf("describe configs: %v", err)
	}
	out["retentionBefore"] = before["retention.ms"]
	out["configCount"] = len(before)
	retention2 := "7200000"
	if err := adm.AlterConfig(sarama.TopicResource, a.Topic,
		map[string]*string{"retention.ms": &retention2}, false); err != nil {
		return nil, fmt.Errorf("alter configs: %v", err)
	}
	after, err := describe()
	if err != nil {
		return nil, fmt.Errorf("describe configs: %v", err)
	}
	out["retentionAfter"] = after["retention.ms"]
	// Sarama 1.22 sends BrokerResource as 5 (the ACL resource numbering; configs use 4), which
	// Kafka refuses, so this only records what came back.
	brokerEntries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource,
		Name: strconv.Itoa(int(brokers[0].ID()))})
	out["brokerConfigCount"], out["brokerConfigError"] = len(brokerEntries), fmt.Sprint(err)

	if err := adm.CreatePartitions(a.Topic, 3, nil, false); err != nil {
		return nil, fmt.Errorf("create partitions: %v", err)
	}
	meta, err = adm.DescribeTopics([]string{a.Topic})
	if err != nil {
		return nil, err
	}
	out["partitionsAfter"] = len(meta[0].Partitions)

	// Ten records in partition 0, then DeleteRecords before offset 4.
	p, err := sarama.NewSyncProducer(a.Brokers, func() *sarama.Config {
		pc := config(a)
		pc.Producer.Return.Successes = true
		pc.Producer.Partitioner = sarama.NewManualPartitioner
		return pc
	}())
	if err != nil {
		return nil, err
	}
	for i := 0; i < 10; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: a.Topic, Partition: 0,
			Value: sarama.StringEncoder(fmt.Sprintf("m%d", i))}); err != nil {
			return nil, err
		}
	}
	p.Close()
	if err := adm.DeleteRecords(a.Topic, map[int32]int64{0: 4}); err != nil {
		return nil, fmt.Errorf("delete records: %v", err)
	}
	client, err := sarama.NewClient(a.Brokers, config(a))
	if err != nil {
		return nil, err
	}
	oldest, err := client.GetOffset(a.Topic, 0, sarama.OffsetOldest)
	if err != nil {
		return nil, err
	}
	newest, err := client.GetOffset(a.Topic, 0, sarama.OffsetNewest)
	if err != nil {
		return nil, err
	}
	client.Close()
	out["oldest"], out["newest"] = oldest, newest

	if a.Group != "" {
		groups, err := adm.ListConsumerGroups()
		if err != nil {
			return nil, fmt.Errorf("list groups: %v", err)
		}
		_, out["groupListed"] = groups[a.Group]
		desc, err := adm.DescribeConsumerGroups([]string{a.Group})
		if err != nil {
			return nil, fmt.Errorf("describe groups: %v", err)
		}
		out["groupState"] = desc[0].State
		// OffsetFetch v1: the partitions must be named (null = all needs v2).
		offsets, err := adm.ListConsumerGroupOffsets(a.Group, map[string][]int32{a.GroupTopic: {0}})
		if err != nil {
			return nil, fmt.Errorf("group offsets: %v", err)
		}
		committed := map[string]int64{}
		for t, parts := range offsets.Blocks {
			for part, b := range parts {
				committed[fmt.Sprintf("%s/%d", t, part)] = b.Offset
			}
		}
		out["groupOffsets"] = committed
	}

	if err := adm.DeleteTopic(a.Topic); err != nil {
		return nil, fmt.Errorf("delete topic: %v", err)
	}
	topics, err = adm.ListTopics()
	if err != nil {
		return nil, err
	}
	_, out["listedAfterDelete"] = topics[a.Topic]
	return out, nil
}

func main() {
	log.SetOutput(os.Stderr)
	if os.Getenv("SARAMA_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags)
	}
	if len(os.Args) < 2 {
		log.Fatal("usage: sarama-client produce|consume|group|admin '<json>'")
	}
	a := &args{}
	if len(os.Args) > 2 {
		if err := json.Unmarshal([]byte(os.Args[2]), a); err != nil {
			log.Fatal(err)
		}
	}
	commands := map[string]func(*args) (interface{}, error){
		"produce": produce, "consume": consume, "group": group, "admin": admin,
	}
	fn, ok := commands[os.Args[1]]
	if !ok {
		log.Fatalf("unknown command %s", os.Args[1])
	}
	result, err := fn(a)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAILED: %v\n", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		log.Fatal(err)
	}
}
