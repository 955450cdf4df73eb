package kvserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"kvlab/internal/browsertest"
	"kvlab/internal/resp"
)

// TestRedisCommands checks the commands real clients send as they
// connect and work, in the shapes redis-server 7 gives them.
func TestRedisCommands(t *testing.T) {
	addr, _ := start(t, "none", nil)
	c := dial(t, addr)
	tests := []struct {
		cmd  []string
		want string // the reply, or its prefix when it ends in "..."
	}{
		{[]string{"ECHO", "hi there"}, "$hi there"},
		{[]string{"ECHO"}, "-ERR wrong number of arguments for 'echo' command"},
		{[]string{"CLIENT", "GETNAME"}, "$nil"},
		{[]string{"CLIENT", "SETNAME", "worker-1"}, "+OK"},
		{[]string{"CLIENT", "GETNAME"}, "$worker-1"},
		{[]string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.25)"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "LIB-VER", "9.23.0"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "COLOR", "red"}, "-ERR Unrecognized option 'COLOR'"},
		{[]string{"CLIENT", "KILL"}, "-ERR unknown subcommand 'KILL'. Try CLIENT HELP."},
		{[]string{"HELLO", "2"}, "*14"},
		{[]string{"HELLO", "3"}, "-NOPROTO unsupported protocol version"},
		{[]string{"HELLO", "x"}, "-ERR Protocol version is not an integer or out of range"},
		{[]string{"HELLO", "2", "SETNAME", "via-hello"}, "*14"},
		{[]string{"CLIENT", "GETNAME"}, "$via-hello"},
		{[]string{"COMMAND", "COUNT"}, fmt.Sprintf(":%d", len(commands))},
		{[]string{"COMMAND", "DOCS", "get", "nosuch"}, "*2"},
		{[]string{"COMMAND", "INFO", "get", "nosuch"}, "*2"},
		{[]string{"COMMAND"}, fmt.Sprintf("*%d", len(commands))},
		{[]string{"MSET", "a", "1", "b", "2"}, "+OK"},
		{[]string{"MSET", "a", "1", "b"}, "-ERR wrong number of arguments for 'mset' command"},
		{[]string{"MGET", "a", "nosuch", "b"}, "*3"},
		{[]string{"EXISTS", "a", "a", "nosuch"}, ":2"},
		{[]string{"DEL", "a", "a"}, ":1"},
		{[]string{"EXISTS", "a"}, ":0"},
		{[]string{"CONFIG", "GET", "appendfsync"}, "*2"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI"},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI"},
	}
	for _, tt := range tests {
		c.send(tt.cmd...)
		got := c.reply()
		if want, prefix := strings.CutSuffix(tt.want, "..."); prefix && !strings.HasPrefix(got, want) || !prefix && got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.cmd, got, tt.want)
		}
	}
	c.send("MGET", "b", "nosuch")
	c.w.Flush()
	if rep, err := resp.ReadReply(c.r); err != nil || len(rep.Elems) != 2 || string(rep.Elems[0].Str) != "2" || !rep.Elems[1].Null {
		t.Errorf("MGET b nosuch = %+v, %v; want [2, nil]", rep, err)
	}
}

// TestTruthfulPersistence checks that CONFIG GET appendfsync and INFO
// persistence say what each policy promises: Redis's "always" only where
// a SET is answered after its fdatasync.
func TestTruthfulPersistence(t *testing.T) {
	for _, tt := range []struct{ policy, fsync, kill string }{
		{"always", "always", "nothing acknowledged"},
		{"group", "always", "nothing acknowledged"},
		{"none", "none", "up to 64 KiB"},
		{"batch:8", "batch:8", "up to 7 acknowledged writes"},
		{"periodic:10ms", "periodic:10ms", "up to 64 KiB"},
	} {
		addr, _ := start(t, tt.policy, nil)
		c := dial(t, addr)
		c.send("CONFIG", "GET", "appendfsync")
		c.w.Flush()
		rep, err := resp.ReadReply(c.r)
		if err != nil || len(rep.Elems) != 2 || string(rep.Elems[1].Str) != tt.fsync {
			t.Errorf("-sync %s: CONFIG GET appendfsync = %+v, %v; want %q", tt.policy, rep, err, tt.fsync)
		}
		c.send("INFO", "persistence")
		if got := c.reply(); !strings.Contains(got, "kv_sync:"+tt.policy+"\r\n") || !strings.Contains(got, "kv_kill_loses:"+tt.kill) {
			t.Errorf("-sync %s: INFO persistence = %q, want kv_sync:%s and kv_kill_loses:%s...", tt.policy, got, tt.policy, tt.kill)
		}
	}
}

// TestMultiExec checks that commands after MULTI are only queued: no
// other connection sees them before EXEC, DISCARD drops them, and a
// refused command makes EXEC apply nothing.
func TestMultiExec(t *testing.T) {
	for _, policy := range []string{"always", "group", "none"} {
		t.Run(policy, func(t *testing.T) {
			addr, db := start(t, policy, nil)
			c, other := dial(t, addr), dial(t, addr)
			expect := func(c *client, cmd []string, want string) {
				t.Helper()
				c.send(cmd...)
				if got := c.reply(); got != want {
					t.Errorf("%q: got %q, want %q", cmd, got, want)
				}
			}
			expect(c, []string{"MULTI"}, "+OK")
			expect(c, []string{"SET", "k", "1"}, "+QUEUED")
			expect(c, []string{"SET", "k", "2"}, "+QUEUED")
			expect(c, []string{"GET", "k"}, "+QUEUED")
			expect(c, []string{"DEL", "k"}, "+QUEUED")
			expect(c, []string{"MSET", "k", "3", "j", "4"}, "+QUEUED")
			expect(other, []string{"GET", "k"}, "$nil")
			before := db.Stats()
			c.send("EXEC")
			c.w.Flush()
			rep, err := resp.ReadReply(c.r)
			var got []string
			for _, e := range rep.Elems {
				got = append(got, fmt.Sprintf("%c%s%d", e.Kind, e.Str, e.Int))
			}
			if want := "+OK0 +OK0 $20 :1 +OK0"; err != nil || strings.Join(got, " ") != want {
				t.Errorf("EXEC = %q, %v; want %q", got, err, want)
			}
			// One engine.Batch: under always one fdatasync for its five
			// writes, where five SETs and DELs would cost five.
			if after := db.Stats(); policy == "always" && after.FsyncsBy.Commit-before.FsyncsBy.Commit != 1 {
				t.Errorf("EXEC of 5 writes under always: %d commit fdatasyncs, want 1 (one atomic batch)", after.FsyncsBy.Commit-before.FsyncsBy.Commit)
			}
			expect(other, []string{"MGET", "k", "j"}, "*2")
			expect(other, []string{"GET", "k"}, "$3")

			expect(c, []string{"MULTI"}, "+OK")
			expect(c, []string{"SET", "d", "1"}, "+QUEUED")
			expect(c, []string{"DISCARD"}, "+OK")
			expect(other, []string{"EXISTS", "d"}, ":0")

			expect(c, []string{"MULTI"}, "+OK")
			expect(c, []string{"SET", "e", "1"}, "+QUEUED")
			expect(c, []string{"SET", "e"}, "-ERR wrong number of arguments for 'set' command")
			expect(c, []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.")
			expect(other, []string{"EXISTS", "e"}, ":0")
			expect(c, []string{"PING"}, "+PONG") // out of the transaction
		})
	}
}

// TestInlineCommands: inline commands as Redis parses them, one ending in
// LF alone included, keep the connection open.
func TestInlineCommands(t *testing.T) {
	addr, _ := start(t, "none", nil)
	c := dial(t, addr)
	c.w.WriteString("SET \"a b\" 'it\\'s'\nGET \"a b\"\nPING\n")
	for _, want := range []string{"+OK", "$it's", "+PONG"} {
		if got := c.reply(); got != want {
			t.Errorf("inline: got %q, want %q", got, want)
		}
	}
}

// tool returns the path of a command-line tool, or skips the test (fails
// it under KVLAB_REQUIRE_TOOLS=1) when it is not installed.
func tool(t *testing.T, name, install string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		browsertest.Missing(t, name+" is not installed ("+install+")")
	}
	return bin
}

// run runs a tool with a deadline (a guard against a hang: a client that
// never gets the reply it waits for) and returns its output.
func run(t *testing.T, stdin []byte, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not finish in 2 minutes (a hang):\n%s", bin, strings.Join(args, " "), out)
	}
	return string(out), err
}

// TestRedisCLI drives kvserver with redis-cli: commands, a transaction
// and --pipe, Redis's bulk loader, which ends with an ECHO and waits for
// its reply.
func TestRedisCLI(t *testing.T) {
	bin := tool(t, "redis-cli", "apt-get install redis-tools, or brew install redis")
	addr, db := start(t, "group", nil)
	host, port, _ := net.SplitHostPort(addr)
	cli := func(args ...string) string {
		out, err := run(t, nil, bin, append([]string{"-h", host, "-p", port}, args...)...)
		if err != nil {
			t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "k", "v"}, "OK"},
		{[]string{"GET", "k"}, "v"},
		{[]string{"ECHO", "hello"}, "hello"},
		{[]string{"MSET", "a", "1", "b", "2"}, "OK"},
		{[]string{"MGET", "a", "b", "c"}, "1\n2\n"},
		{[]string{"EXISTS", "a", "c"}, "1"},
		{[]string{"CLIENT", "ID"}, ""},
		{[]string{"COMMAND", "COUNT"}, fmt.Sprint(len(commands))},
	} {
		if got := cli(tt.args...); tt.want != "" && got != strings.TrimSpace(tt.want) {
			t.Errorf("redis-cli %q = %q, want %q", tt.args, got, tt.want)
		}
	}

	const keys = 500
	var in bytes.Buffer
	for i := range keys {
		fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$%d\r\npipe-%d\r\n$1\r\nv\r\n", len(fmt.Sprintf("pipe-%d", i)), i)
	}
	out, err := run(t, in.Bytes(), bin, "-h", host, "-p", port, "--pipe")
	if err != nil || !strings.Contains(out, fmt.Sprintf("errors: 0, replies: %d", keys)) {
		t.Errorf("redis-cli --pipe: %v\n%s\nwant errors: 0, replies: %d", err, out, keys)
	}
	if v, err := db.Get([]byte(fmt.Sprintf("pipe-%d", keys-1))); err != nil || string(v) != "v" {
		t.Errorf("after redis-cli --pipe: the last key = %q, %v", v, err)
	}
}

// redisBenchmarkTests are redis-benchmark 7's default tests (-t names).
var redisBenchmarkTests = []string{"ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush",
	"lpop", "rpop", "sadd", "hset", "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500",
	"lrange_600", "mset"}

// TestRedisBenchmarkEveryTest runs each of redis-benchmark's default
// tests against kvserver with a few requests: each either runs or stops
// at kvserver's error for a command it does not have, and none hangs.
// Then the single-key SET test, pipelined, under group: its SETs share
// fdatasyncs.
func TestRedisBenchmarkEveryTest(t *testing.T) {
	bin := tool(t, "redis-benchmark", "apt-get install redis-tools, or brew install redis")
	addr, db := start(t, "group", nil)
	host, port, _ := net.SplitHostPort(addr)
	ran := regexp.MustCompile(`(?m)^"[A-Z_]+( \(\d+ keys\)| \(first \d+ elements\))?","[0-9.]+"`)
	for _, test := range redisBenchmarkTests {
		out, _ := run(t, nil, bin, "-h", host, "-p", port, "-n", "40", "-c", "2", "-t", test, "--csv")
		if !ran.MatchString(out) && !strings.Contains(out, "ERR unknown command") {
			t.Errorf("redis-benchmark -t %s: neither a result nor kvserver's unknown-command error:\n%s", test, out)
		}
	}
	// Each fdatasync slowed by 5 ms, so that sharing is certain rather
	// than a matter of timing on a busy machine.
	addr, db = start(t, "group", slowSyncFS)
	host, port, _ = net.SplitHostPort(addr)
	before := db.Stats()
	const n = 512
	out, err := run(t, nil, bin, "-h", host, "-p", port, "-n", fmt.Sprint(n), "-c", "1", "-P", "16", "-t", "set", "--csv")
	if err != nil {
		t.Fatalf("redis-benchmark -P 16 -t set: %v\n%s", err, out)
	}
	after := db.Stats()
	puts, fsyncs := after.Puts-before.Puts, after.Fsyncs-before.Fsyncs
	t.Logf("redis-benchmark -c 1 -P 16 -t set: %d SETs of one key, %d fdatasyncs", puts, fsyncs)
	if puts < n || fsyncs > puts/4 {
		t.Errorf("redis-benchmark -c 1 -P 16 -t set (one key): %d SETs, %d fdatasyncs; want %d SETs sharing them (at most %d)", puts, fsyncs, n, puts/4)
	}
}

// TestGoRedis connects with go-redis v9 as an application would: with a
// client name (sent as the connection opens, after HELLO 3 is refused)
// and a MULTI/EXEC transaction (TxPipelined).
func TestGoRedis(t *testing.T) {
	addr, _ := start(t, "group", nil)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ClientName: "kvlab-go", DialTimeout: 10 * time.Second,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	if name, err := rdb.ClientGetName(ctx).Result(); err != nil || name != "kvlab-go" {
		t.Fatalf("CLIENT GETNAME = %q, %v; want kvlab-go (go-redis sends CLIENT SETNAME as it connects)", name, err)
	}
	var get *redis.StringCmd
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "tx-a", "1", 0)
		p.Set(ctx, "tx-a", "2", 0)
		get = p.Get(ctx, "tx-a")
		p.MSet(ctx, "tx-b", "3", "tx-c", "4")
		return nil
	})
	if err != nil || len(cmds) != 4 || get.Val() != "2" {
		t.Fatalf("TxPipelined: %d commands, GET %q, %v; want 4, \"2\", nil", len(cmds), get.Val(), err)
	}
	if vals, err := rdb.MGet(ctx, "tx-a", "tx-b", "tx-c", "nosuch").Result(); err != nil || fmt.Sprint(vals) != "[2 3 4 <nil>]" {
		t.Errorf("MGET = %v, %v; want [2 3 4 <nil>]", vals, err)
	}
	if n, err := rdb.Exists(ctx, "tx-a", "nosuch").Result(); err != nil || n != 1 {
		t.Errorf("EXISTS = %d, %v; want 1", n, err)
	}
	if got, err := rdb.Echo(ctx, "x").Result(); err != nil || got != "x" {
		t.Errorf("ECHO = %q, %v", got, err)
	}
}

// python returns a python3 that can import redis (Debian's python3-redis),
// or skips the test.
func python(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(bin); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	browsertest.Missing(t, "python3 with the redis module is not installed (apt-get install python3-redis)")
	return ""
}

// TestPythonRedis connects with redis-py as an application would: a
// client name and pipeline(transaction=True), which is MULTI ... EXEC.
func TestPythonRedis(t *testing.T) {
	bin := python(t)
	addr, _ := start(t, "group", nil)
	host, port, _ := net.SplitHostPort(addr)
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]), client_name="kvlab-py", socket_timeout=60)
print("name", r.client_getname())
p = r.pipeline(transaction=True)
p.set("py-a", "1").set("py-a", "2").get("py-a").mset({"py-b": "3"}).exists("py-a", "py-b", "nope")
print("tx", p.execute())
print("mget", r.mget("py-a", "py-b", "nope"))
print("echo", r.echo("hi"))
`
	out, err := run(t, nil, bin, "-c", script, host, port)
	if err != nil {
		t.Fatalf("python3 redis: %v\n%s", err, out)
	}
	for _, want := range []string{
		"name kvlab-py",
		"tx [True, True, b'2', True, 2]",
		"mget [b'2', b'3', None]",
		"echo b'hi'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("python3 redis printed:\n%s\nwant a line %q", out, want)
		}
	}
}

// startRedis starts a throwaway redis-server on a free loopback port and
// returns its address, or skips the test when redis-server is absent.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := tool(t, "redis-server", "apt-get install redis-server, or brew install redis")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if i == 500 {
			t.Fatalf("redis-server on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shape renders a reply's kinds and array lengths, with the text of
// simple strings and errors and, where text is true, of bulk strings and
// integers too.
func shape(r resp.Reply, text bool) string {
	switch {
	case r.Kind == resp.Array && r.Null:
		return "*nil"
	case r.Kind == resp.Array:
		parts := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			parts[i] = shape(e, text)
		}
		return fmt.Sprintf("*%d[%s]", len(r.Elems), strings.Join(parts, " "))
	case r.Kind == resp.Bulk && r.Null:
		return "$nil"
	case r.Kind == resp.Simple || r.Kind == resp.Error:
		return string(r.Kind) + string(r.Str)
	case !text:
		return string(r.Kind)
	case r.Kind == resp.Integer:
		return fmt.Sprintf(":%d", r.Int)
	}
	return "$" + string(r.Str)
}

// TestShapesLikeRedis sends the same commands to kvserver and to a real
// redis-server 7 and compares the replies: their kinds and array lengths
// always, their text where the two should agree.
func TestShapesLikeRedis(t *testing.T) {
	redisAddr := startRedis(t)
	kvAddr, _ := start(t, "none", nil)
	tests := []struct {
		cmd  string // an inline command; | separates a pipeline's commands
		text bool   // compare the text of bulk strings and integers too
	}{
		{"ECHO hello", true},
		{"PING", true},
		{"PING hi", true},
		{"HELLO 2", false},
		{"HELLO x", true},
		{"CLIENT SETNAME n1|CLIENT GETNAME", true},
		{"CLIENT ID", false},
		{"CLIENT SETNAME \"a b\"", true},
		{"CLIENT NOSUCH", true},
		{"COMMAND COUNT", false},
		{"COMMAND INFO nosuch", true},
		{"COMMAND DOCS nosuch", true},
		{"MSET a 1 b 2|MGET a nosuch b|EXISTS a a nosuch|DEL a a nosuch|EXISTS a", true},
		{"MSET a", true},
		{"GET", true},
		{"NOSUCH x y", true},
		{"MULTI|SET t 1|GET t|DEL t|EXEC", true},
		{"MULTI|SET t 1|SET t|EXEC|GET t", true},
		{"MULTI|MULTI|DISCARD|DISCARD", true},
		{"EXEC", true},
		{"SET q \"a\\x41\\n\" |GET q|SET q 'it\\'s'|GET q", true},
		{"CONFIG GET nosuch", true},
		{"SELECT 0", true},
	}
	replies := func(addr, cmd string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute)) // a guard against a hang
		cmds := strings.Split(cmd, "|")
		if _, err := c.Write([]byte(strings.Join(cmds, "\n") + "\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		var out []string
		for range cmds {
			rep, err := resp.ReadReply(r)
			if err != nil {
				t.Fatalf("%q on %s: %v", cmd, addr, err)
			}
			out = append(out, shape(rep, true))
		}
		return strings.Join(out, " | ")
	}
	for _, tt := range tests {
		want, got := replies(redisAddr, tt.cmd), replies(kvAddr, tt.cmd)
		if !tt.text {
			want, got = stripText(want), stripText(got)
		}
		if got != want {
			t.Errorf("%q:\n  kvserver     %s\n  redis-server %s", tt.cmd, got, want)
		}
	}
}

// stripText drops the text of bulk strings and integers from a shape.
func stripText(s string) string {
	return regexp.MustCompile(`([$:])[^ \]|]*`).ReplaceAllString(s, "$1")
}
