// kafka-go (Debian's golang-github-segmentio-kafka-go-dev, 0.2.x), unmodified, against an Odradek
// broker. This kafka-go predates ApiVersions and record batches: it writes magic-1 message sets
// with Produce v2 and reads with Fetch v2, so the broker converts both ways. Built in GOPATH mode
// by tests/integration/test_other_clients.py and run as
//
//	kafkago-client <command> '<json arguments>'
//
// Each command prints one JSON object on stdout and exits 0, or prints the error on stderr and
// exits 1. Commands:
//
//	produce  {brokers, topic, codec, count}  a Writer (batches, the codec's message sets)
//	read     {brokers, topic, partition, count}  a Reader on one partition from the first offset
//	group    {brokers, topic, group, count, sessionTimeoutMs}  a Reader in a consumer group; commits what it read
//	admin    {brokers, topic}  CreateTopics v0, Metadata v1 partitions, DeleteTopics v0
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

type args struct {
	Brokers    []string `json:"brokers"`
	Topic      string   `json:"topic"`
	Codec      string   `json:"codec"`
	Count      int      `json:"count"`
	Partition  int      `json:"partition"`
	Partitions int      `json:"partitions"`
	Group      string   `json:"group"`
	TimeoutMs  int      `json:"timeoutMs"`
	SessionMs  int      `json:"sessionTimeoutMs"`
	ClientID   string   `json:"clientId"`
}

type message struct {
	Partition int     `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Timestamp int64   `json:"timestamp"`
}

func codec(name string) kafka.CompressionCodec {
	switch name {
	case "gzip":
		return gzip.NewCompressionCodec()
	case "snappy":
		return snappy.NewCompressionCodec()
	case "lz4":
		return lz4.NewCompressionCodec()
	case "", "none":
		return nil
	}
	log.Fatalf("unknown codec %q", name)
	return nil
}

func strp(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func toMessage(m kafka.Message) message {
	return message{Partition: m.Partition, Offset: m.Offset, Key: strp(m.Key), Value: strp(m.Value),
		Timestamp: m.Time.UnixNano() / int64(time.Millisecond)}
}

func dialer(a *args) *kafka.Dialer {
	id := a.ClientID
	if id == "" {
		id = "odradek-kafka-go"
	}
	return &kafka.Dialer{ClientID: id, Timeout: 10 * time.Second, DualStack: true}
}

func timeout(a *args) time.Duration {
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	return 30 * time.Second
}

func produce(a *args) (interface{}, error) {
	w := kafka.NewWriter(kafka.WriterConfig{
		Brokers:          a.Brokers,
		Topic:            a.Topic,
		Dialer:           dialer(a),
		Balancer:         &kafka.RoundRobin{},
		BatchSize:        10,
		BatchTimeout:     10 * time.Millisecond,
		RequiredAcks:     -1,
		CompressionCodec: codec(a.Codec),
	})
	var msgs []kafka.Message
	var sent []message
	for i := 0; i < a.Count; i++ {
		m := kafka.Message{Time: time.Unix(0, (1700000000000+int64(i))*int64(time.Millisecond))}
		s := message{Timestamp: 1700000000000 + int64(i)}
		if i%7 != 0 {
			k := fmt.Sprintf("key-%d", i)
			m.Key, s.Key = []byte(k), &k
		}
		if i%11 != 0 {
			v := fmt.Sprintf("value-%d-%d", i, i*i)
			m.Value, s.Value = []byte(v), &v
		}
		msgs = append(msgs, m)
		sent = append(sent, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(a))
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return map[string]interface{}{"sent": sent}, nil
}

func read(a *args) (interface{}, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   a.Brokers,
		Topic:     a.Topic,
		Dialer:    dialer(a),
		Partition: a.Partition,
		MinBytes:  1,
		MaxBytes:  1 << 20,
		MaxWait:   200 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(a))
	defer cancel()
	var got []message
	for len(got) < a.Count {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return map[string]interface{}{"messages": got, "error": err.Error()}, nil
		}
		got = append(got, toMessage(m))
	}
	return map[string]interface{}{"messages": got}, nil
}

func group(a *args) (interface{}, error) {
	// kafka-go 0.2 never sends LeaveGroup: the next member of the group waits for this one's
	// session to time out, so tests pass a short one (and lower the broker's minimum).
	session := 10 * time.Second
	if a.SessionMs > 0 {
		session = time.Duration(a.SessionMs) * time.Millisecond
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           a.Brokers,
		Topic:             a.Topic,
		GroupID:           a.Group,
		Dialer:            dialer(a),
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           200 * time.Millisecond,
		HeartbeatInterval: session / 5,
		SessionTimeout:    session,
		RebalanceTimeout:  10 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout(a))
	defer cancel()
	var got []message
	var readErr string
	for len(got) < a.Count {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			readErr = err.Error()
			break
		}
		got = append(got, toMessage(m))
		// A synchronous OffsetCommit per message.
		if err := r.CommitMessages(ctx, m); err != nil {
			r.Close()
			return nil, fmt.Errorf("commit: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return map[string]interface{}{"messages": got, "error": readErr}, nil
}

func admin(a *args) (interface{}, error) {
	out := map[string]interface{}{}
	conn, err := dialer(a).Dial("tcp", a.Brokers[0])
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	err = conn.CreateTopics(kafka.TopicConfig{Topic: a.Topic, NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}})
	if err != nil {
		return nil, fmt.Errorf("create topics: %v", err)
	}
	err = conn.CreateTopics(kafka.TopicConfig{Topic: a.Topic, NumPartitions: 3, ReplicationFactor: 1})
	out["createAgainError"] = fmt.Sprint(err)
	parts, err := conn.ReadPartitions(a.Topic)
	if err != nil {
		return nil, fmt.Errorf("read partitions: %v", err)
	}
	var ids []int
	for _, p := range parts {
		ids = append(ids, p.ID)
	}
	sort.Ints(ids)
	out["partitions"] = ids
	if err := conn.DeleteTopics(a.Topic); err != nil {
		return nil, fmt.Errorf("delete topics: %v", err)
	}
	parts, err = conn.ReadPartitions(a.Topic)
	out["partitionsAfterDelete"], out["readAfterDeleteError"] = len(parts), fmt.Sprint(err)
	return out, nil
}

func main() {
	log.SetOutput(os.Stderr)
	if len(os.Args) < 2 {
		log.Fatal("usage: kafkago-client produce|read|group|admin '<json>'")
	}
	a := &args{}
	if len(os.Args) > 2 {
		if err := json.Unmarshal([]byte(os.Args[2]), a); err != nil {
			log.Fatal(err)
		}
	}
	commands := map[string]func(*args) (interface{}, error){
		"produce": produce, "read": read, "group": group, "admin": admin,
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
