package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// BenchmarkEtcdTable is make bench's table for the etcd authority, on a local
// three-member cluster of the pinned 3.6 (etcdServer): how long an election
// takes to pass on when its holder stops or dies, and what one renewal costs.
func BenchmarkEtcdTable(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime=1x: each row is itself a repeated measurement")
	}
	srv := etcdServer(b)
	c := etcdtest.Start(b, etcdtest.Options{Server: srv})
	server := c.URL("/octostore-bench")
	term := benchTakeover(b, srv, server, 10, false)
	kill := benchTakeover(b, srv, server, 3, true)
	renew := benchRenewal(b, c.Client(b), 200)
	add := func(what string, samples []time.Duration, note string) row {
		return row{what, strconv.Itoa(len(samples)), ms(pct(samples, 50)), ms(pct(samples, 90)), ms(slices.Max(samples)), note}
	}
	printTable(fmt.Sprintf("etcd authority (%s, %s; 3 members on loopback, election timeout 1 s; supervisors with --ttl %d, embedded hold):", srv.Name, c.ServerVersion(b), etcdAgentTTL),
		row{"measurement", "runs", "p50", "p90", "max", "note"}, []row{
			add("takeover after SIGTERM of the holder: its released line -> successor's leader line", term, "containment, then revoke: the successor's watch sees the key go"),
			add("takeover after SIGKILL of the holder's hold: kill -> successor's leader line", kill, fmt.Sprintf("the lease lapses: at most the TTL (%d s) after its last renewal", etcdAgentTTL)),
			add("renewal round trip: KeepAliveOnce + Get of the key", renew, "what each renewal of a hold costs (every min(TTL/3, 5 s))"),
		})
}

// benchTakeover hands an election from one supervisor to a waiting second n
// times and measures from the holder's end to the successor's leader line:
// the holder's released line after SIGTERM, or the SIGKILL of its hold.
func benchTakeover(b *testing.B, srv etcdtest.Server, server string, n int, kill bool) []time.Duration {
	var out []time.Duration
	for i := range n {
		dir := b.TempDir()
		w := benchScript(b, dir, "--term-exits")
		room := fmt.Sprintf("bench-takeover-%t-%d", kill, i)
		holder := startBenchAgent(b, etcdAgent(srv, server, room, "holder", w))
		holder.await(b, "leader")
		next := startBenchAgent(b, etcdAgent(srv, server, room, "next", w))
		next.await(b, "waiting")
		var ended time.Time
		if kill {
			h, err := holdOf(holder.cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			ended = time.Now()
			if err := proctest.Signal(h, syscall.SIGKILL); err != nil {
				b.Fatal(err)
			}
		} else {
			if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				b.Fatal(err)
			}
			ended = holder.await(b, "released")
		}
		out = append(out, next.await(b, "leader").Sub(ended))
		holder.wait(b)
		if err := next.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		next.wait(b)
	}
	return out
}

// benchAgent is a supervisor whose stdout lines are read as they come, each
// with the moment it was read.
type benchAgent struct {
	cmd   *exec.Cmd
	lines chan benchLine
}

type benchLine struct {
	event string
	at    time.Time
}

func startBenchAgent(b *testing.B, cmd *exec.Cmd) *benchAgent {
	b.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	a := &benchAgent{cmd: cmd, lines: make(chan benchLine, 64)}
	go a.read(stdout)
	return a
}

func (a *benchAgent) read(stdout io.Reader) {
	defer close(a.lines)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		at := time.Now()
		var m struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(sc.Bytes(), &m)
		a.lines <- benchLine{m.Event, at}
	}
}

// await returns when the agent's event line was read; other lines before it
// are skipped. A generous bound proves it came at all.
func (a *benchAgent) await(b *testing.B, event string) time.Time {
	b.Helper()
	limit := time.After(time.Minute)
	for {
		select {
		case l, ok := <-a.lines:
			if !ok {
				b.Fatalf("the supervisor's stdout ended before its %q line", event)
			}
			if l.event == event {
				return l.at
			}
		case <-limit:
			b.Fatalf("no %q line within a minute", event)
		}
	}
}

// wait reaps the supervisor once its stdout is drained.
func (a *benchAgent) wait(b *testing.B) {
	b.Helper()
	for range a.lines {
	}
	_ = a.cmd.Wait()
}

// benchRenewal times n renewals as a hold makes them: KeepAliveOnce of a
// lease, then a Get of its key, each call requiring a leader.
func benchRenewal(b *testing.B, cli *clientv3.Client, n int) []time.Duration {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), time.Minute)
	defer cancel()
	lease, err := cli.Grant(ctx, etcdAgentTTL)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Revoke(context.Background(), lease.ID)
	const key = "/octostore-bench/renewal"
	if _, err := cli.Put(ctx, key, "", clientv3.WithLease(lease.ID)); err != nil {
		b.Fatal(err)
	}
	var out []time.Duration
	for range n {
		began := time.Now()
		if _, err := cli.KeepAliveOnce(ctx, lease.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
		out = append(out, time.Since(began))
	}
	return out
}
