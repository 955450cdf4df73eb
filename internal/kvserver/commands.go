package kvserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
)

// command is one command kvserver answers, with what COMMAND, COMMAND
// INFO and COMMAND DOCS say about it (Redis 7's fields).
type command struct {
	name  string
	arity int // Redis's convention: N exactly N words with the name, -N at least N
	flags []string
	// The key positions: first, last (-1: the last argument) and step.
	first, last, step int
	// batch: the command runs inside a batch (pipeline). Any other command
	// first commits the batch before it (its writes applied, its replies
	// sent), so it sees every earlier command's effects, counters included.
	batch bool
	run   func(ss *session, args [][]byte)
	// For COMMAND DOCS.
	summary, since, group, complexity string
}

// commands is the command table, by lower-case name. It is filled in by
// init (the COMMAND command reads it).
var commands map[string]*command

func init() {
	list := []*command{
		{name: "get", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, batch: true, run: (*session).cmdGet,
			summary: "Returns the string value of a key.", since: "1.0.0", group: "string", complexity: "O(1)"},
		{name: "set", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, batch: true, run: (*session).cmdSet,
			summary: "Sets the string value of a key (kvserver: SET key value, no options).", since: "1.0.0", group: "string", complexity: "O(1)"},
		{name: "del", arity: -2, flags: []string{"write"}, first: 1, last: -1, step: 1, batch: true, run: (*session).cmdDel,
			summary: "Deletes one or more keys.", since: "1.0.0", group: "generic", complexity: "O(N) where N is the number of keys that will be removed."},
		{name: "exists", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, batch: true, run: (*session).cmdExists,
			summary: "Determines whether one or more keys exist.", since: "1.0.0", group: "generic", complexity: "O(N) where N is the number of keys to check."},
		{name: "mget", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, batch: true, run: (*session).cmdMget,
			summary: "Atomically returns the string values of one or more keys.", since: "1.0.0", group: "string", complexity: "O(N) where N is the number of keys to retrieve."},
		{name: "mset", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: -1, step: 2, batch: true, run: (*session).cmdMset,
			summary: "Atomically creates or modifies the string values of one or more keys.", since: "1.0.1", group: "string", complexity: "O(N) where N is the number of keys to set."},
		{name: "ping", arity: -1, flags: []string{"fast"}, batch: true, run: (*session).cmdPing,
			summary: "Returns the server's liveliness response.", since: "1.0.0", group: "connection", complexity: "O(1)"},
		{name: "echo", arity: 2, flags: []string{"fast"}, batch: true, run: (*session).cmdEcho,
			summary: "Returns the given string.", since: "1.0.0", group: "connection", complexity: "O(1)"},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, batch: true, run: (*session).cmdSelect,
			summary: "Changes the selected database (kvserver has one: 0).", since: "1.0.0", group: "connection", complexity: "O(1)"},
		{name: "info", arity: -1, flags: []string{"loading", "stale"}, run: (*session).cmdInfo,
			summary: "Returns information and statistics about the server.", since: "1.0.0", group: "server", complexity: "O(1)"},
		{name: "config", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, run: (*session).cmdConfig,
			summary: "CONFIG GET save|appendonly|appendfsync and CONFIG RESETSTAT.", since: "2.0.0", group: "server", complexity: "O(1)"},
		{name: "command", arity: -1, flags: []string{"loading", "stale"}, run: (*session).cmdCommand,
			summary: "Returns detailed information about all commands.", since: "2.8.13", group: "server", complexity: "O(N) where N is the total number of commands"},
		{name: "client", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, run: (*session).cmdClient,
			summary: "CLIENT ID, GETNAME, SETNAME and SETINFO.", since: "2.4.0", group: "connection", complexity: "O(1)"},
		{name: "hello", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, run: (*session).cmdHello,
			summary: "Handshakes with the server (kvserver speaks RESP2 only).", since: "6.0.0", group: "connection", complexity: "O(1)"},
		{name: "multi", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, run: (*session).cmdMulti,
			summary: "Starts a transaction.", since: "1.2.0", group: "transactions", complexity: "O(1)"},
		{name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale"}, run: (*session).cmdExec,
			summary: "Executes all commands in a transaction.", since: "1.2.0", group: "transactions", complexity: "Depends on commands in the transaction"},
		{name: "discard", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, run: (*session).cmdDiscard,
			summary: "Discards a transaction.", since: "2.0.0", group: "transactions", complexity: "O(N), when N is the number of queued commands"},
		{name: "quit", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, run: (*session).cmdQuit,
			summary: "Closes the connection.", since: "1.0.0", group: "connection", complexity: "O(1)"},
	}
	commands = map[string]*command{}
	for _, c := range list {
		commands[c.name] = c
	}
}

// lookup finds cmd's command and checks its arity. It returns the error
// reply (as Redis words it) when cmd is not one kvserver answers.
func lookup(cmd [][]byte) (*command, string) {
	name := strings.ToLower(string(cmd[0]))
	c := commands[name]
	if c == nil {
		return nil, fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", cmd[0], quoteArgs(cmd[1:]))
	}
	if c.arity > 0 && len(cmd) != c.arity || c.arity < 0 && len(cmd) < -c.arity {
		return nil, fmt.Sprintf("ERR wrong number of arguments for '%s' command", name)
	}
	return c, ""
}

// do runs one command of the batch, or queues it after MULTI. It reports
// whether the client asked to QUIT.
func (ss *session) do(cmd [][]byte) (quit bool) {
	ss.cmds++
	for _, a := range cmd {
		ss.args += len(a)
	}
	name := strings.ToLower(string(cmd[0]))
	if ss.multi && name != "exec" && name != "discard" && name != "multi" && name != "quit" {
		ss.queue(cmd)
		return false
	}
	ss.run(cmd)
	return name == "quit"
}

// run runs one command.
func (ss *session) run(cmd [][]byte) {
	c, msg := lookup(cmd)
	if c == nil {
		resp.WriteError(&ss.held, msg)
		return
	}
	if !c.batch && !ss.tx {
		ss.commit()
	}
	c.run(ss, cmd[1:])
}

// queue queues a command after MULTI, as Redis does: a command that is
// unknown or has the wrong number of arguments is refused, and makes EXEC
// abort.
func (ss *session) queue(cmd [][]byte) {
	if _, msg := lookup(cmd); msg != "" {
		ss.dirty = true
		resp.WriteError(&ss.held, msg)
		return
	}
	size := 0
	for _, a := range cmd {
		size += len(a)
	}
	if len(ss.queued) >= maxQueued || ss.queuedBytes+size > resp.MaxCommand {
		ss.dirty = true
		resp.WriteError(&ss.held, fmt.Sprintf("ERR kvserver queues at most %d commands of %d MiB together in a transaction", maxQueued, resp.MaxCommand>>20))
		return
	}
	ss.queued = append(ss.queued, cmd)
	ss.queuedBytes += size
	resp.WriteSimple(&ss.held, "QUEUED")
}

func (ss *session) errorf(format string, args ...any) {
	resp.WriteError(&ss.held, fmt.Sprintf(format, args...))
}

// checkWrite returns the engine's error for a key or value it would
// refuse, so that a refused write gets its error reply at once and never
// reaches a batch.
func checkWrite(key, value []byte) error {
	if len(key) == 0 || len(key) > engine.MaxKeySize {
		return fmt.Errorf("%w: %d bytes, allowed 1..%d", engine.ErrKeyTooLarge, len(key), engine.MaxKeySize)
	}
	if len(value) > engine.MaxValueSize {
		return fmt.Errorf("%w: %d bytes, the limit is %d", engine.ErrValueTooLarge, len(value), engine.MaxValueSize)
	}
	return nil
}

// reply notes that the reply written to held since from stands only if
// the n writes queued since first succeed.
func (ss *session) pending(from, first int, cmd string, readTook time.Duration) {
	ss.waiting = append(ss.waiting, pendingReply{from: from, to: ss.held.Len(), first: first, n: len(ss.writes) - first, cmd: cmd, readTook: readTook})
}

func (ss *session) cmdSet(args [][]byte) {
	if len(args) > 2 {
		ss.errorf("ERR SET options are not supported by kvserver: SET key value only")
		return
	}
	if err := checkWrite(args[0], args[1]); err != nil {
		ss.errorf("ERR %v", err)
		return
	}
	from, first := ss.held.Len(), len(ss.writes)
	ss.queueWrite(write{key: args[0], value: args[1]})
	resp.WriteSimple(&ss.held, "OK")
	ss.pending(from, first, "set", 0)
}

func (ss *session) cmdMset(args [][]byte) {
	if len(args)%2 != 0 {
		ss.errorf("ERR wrong number of arguments for 'mset' command")
		return
	}
	for i := 0; i < len(args); i += 2 {
		if err := checkWrite(args[i], args[i+1]); err != nil {
			ss.errorf("ERR %v", err)
			return
		}
	}
	from, first := ss.held.Len(), len(ss.writes)
	for i := 0; i < len(args); i += 2 {
		ss.queueWrite(write{key: args[i], value: args[i+1]})
	}
	resp.WriteSimple(&ss.held, "OK")
	ss.pending(from, first, "mset", 0)
}

func (ss *session) cmdGet(args [][]byte) {
	start := time.Now()
	v, err := ss.get(args[0])
	ss.s.stats.record("get", time.Since(start))
	ss.value(v, err)
}

// value writes a GET's reply: the value, null for a missing key, or the
// error.
func (ss *session) value(v []byte, err error) {
	switch {
	case err == nil:
		resp.WriteBulk(&ss.held, v)
	case err == engine.ErrNotFound:
		resp.WriteNull(&ss.held)
	default:
		ss.errorf("ERR %v", err)
	}
}

func (ss *session) cmdMget(args [][]byte) {
	start := time.Now()
	resp.WriteArray(&ss.held, len(args))
	for _, k := range args {
		v, err := ss.get(k)
		if err != nil && err != engine.ErrNotFound {
			resp.WriteNull(&ss.held) // an array element cannot be an error in RESP2's MGET
		} else {
			ss.value(v, err)
		}
		if !ss.room() {
			return
		}
	}
	ss.s.stats.record("mget", time.Since(start))
}

func (ss *session) cmdExists(args [][]byte) {
	start := time.Now()
	var n int64
	for _, k := range args {
		ok, err := ss.exists(k)
		if err != nil {
			ss.errorf("ERR %v", err)
			return
		}
		if ok {
			n++
		}
	}
	ss.s.stats.record("exists", time.Since(start))
	resp.WriteInt(&ss.held, n)
}

// cmdDel deletes each key that exists and replies with how many did. (The
// engine's Delete writes a tombstone for a missing key too; DEL's count
// needs the lookup first.)
func (ss *session) cmdDel(args [][]byte) {
	start := time.Now()
	first := len(ss.writes)
	var n int64
	for _, k := range args {
		ok, err := ss.exists(k)
		if err != nil {
			ss.errorf("ERR %v", err)
			return
		}
		if ok {
			ss.queueWrite(write{key: k, del: true})
			n++
		}
	}
	from := ss.held.Len()
	resp.WriteInt(&ss.held, n)
	ss.pending(from, first, "del", time.Since(start))
}

func (ss *session) cmdPing(args [][]byte) {
	switch len(args) {
	case 0:
		resp.WriteSimple(&ss.held, "PONG")
	case 1:
		resp.WriteBulk(&ss.held, args[0])
	default:
		ss.errorf("ERR wrong number of arguments for 'ping' command")
	}
}

func (ss *session) cmdEcho(args [][]byte) { resp.WriteBulk(&ss.held, args[0]) }

func (ss *session) cmdSelect(args [][]byte) {
	if string(args[0]) == "0" {
		resp.WriteSimple(&ss.held, "OK")
		return
	}
	ss.errorf("ERR kvserver has one database: SELECT 0 only")
}

func (ss *session) cmdQuit([][]byte) { resp.WriteSimple(&ss.held, "OK") }

func (ss *session) cmdMulti([][]byte) {
	if ss.multi {
		ss.errorf("ERR MULTI calls can not be nested")
		return
	}
	ss.multi = true
	resp.WriteSimple(&ss.held, "OK")
}

func (ss *session) cmdDiscard([][]byte) {
	if !ss.multi {
		ss.errorf("ERR DISCARD without MULTI")
		return
	}
	ss.endMulti()
	resp.WriteSimple(&ss.held, "OK")
}

func (ss *session) endMulti() {
	ss.multi, ss.dirty, ss.queuedBytes = false, false, 0
	clear(ss.queued)
	ss.queued = ss.queued[:0]
}

// cmdExec runs the queued commands as one transaction: under s.txMu held
// for writing, so no other connection reads or writes in between, with
// their writes applied as one engine.Batch (applyWrites), all or none
// after a crash, and every reply sent only after. Nothing is applied
// before EXEC: the commands were only queued.
func (ss *session) cmdExec([][]byte) {
	if !ss.multi {
		ss.errorf("ERR EXEC without MULTI")
		return
	}
	queued := ss.queued
	if ss.dirty {
		ss.endMulti()
		ss.errorf("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	ss.multi = false
	// ss.commit ran before (EXEC is not a batch command): the batch is
	// empty, and everything in it from here on is the transaction's.
	ss.s.txMu.Lock()
	ss.tx = true
	resp.WriteArray(&ss.held, len(queued))
	for _, cmd := range queued {
		ss.run(cmd)
		if ss.txFull || !ss.room() {
			break
		}
	}
	if ss.txFull {
		ss.reset()
		ss.errorf("EXECABORT Transaction discarded: its reply would pass %d MiB, and kvserver holds a transaction's reply until its writes are applied; nothing was applied", maxTxReply>>20)
	}
	ss.commit()
	ss.tx, ss.txFull = false, false
	ss.s.txMu.Unlock()
	ss.endMulti()
}

// cmdClient answers CLIENT ID, GETNAME, SETNAME and SETINFO, which
// clients send as they connect (go-redis and redis-py: SETNAME with a
// client name, SETINFO with their library's name and version).
func (ss *session) cmdClient(args [][]byte) {
	sub := strings.ToLower(string(args[0]))
	switch {
	case sub == "id" && len(args) == 1:
		resp.WriteInt(&ss.held, ss.id)
	case sub == "getname" && len(args) == 1:
		if ss.name == nil {
			resp.WriteNull(&ss.held)
		} else {
			resp.WriteBulk(&ss.held, ss.name)
		}
	case sub == "setname" && len(args) == 2:
		if err := ss.setName(args[1]); err != "" {
			ss.errorf("%s", err)
			return
		}
		resp.WriteSimple(&ss.held, "OK")
	case sub == "setinfo" && len(args) == 3:
		attr := strings.ToLower(string(args[1]))
		if attr != "lib-name" && attr != "lib-ver" {
			ss.errorf("ERR Unrecognized option '%s'", args[1])
			return
		}
		resp.WriteSimple(&ss.held, "OK")
	case slices.Contains([]string{"id", "getname", "setname", "setinfo"}, sub):
		ss.errorf("ERR wrong number of arguments for 'client|%s' command", sub)
	default:
		ss.errorf("ERR unknown subcommand '%s'. Try CLIENT HELP.", args[0])
	}
}

// setName sets the connection's name, refused as Redis refuses it.
func (ss *session) setName(name []byte) string {
	for _, c := range name {
		if c < '!' || c > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	if len(name) == 0 {
		ss.name = nil
	} else {
		ss.name = append([]byte(nil), name...)
	}
	return ""
}

// cmdHello answers HELLO [protover [AUTH username password] [SETNAME
// name]]. kvserver speaks RESP2 only: HELLO 3 is refused with Redis's
// NOPROTO error, from which clients fall back to RESP2 (go-redis v9
// does; redis-py sends HELLO only when asked for protocol 3).
func (ss *session) cmdHello(args [][]byte) {
	if len(args) > 0 {
		v, err := strconv.ParseInt(string(args[0]), 10, 64)
		if err != nil {
			ss.errorf("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			ss.errorf("NOPROTO unsupported protocol version")
			return
		}
		var name []byte
		setName := false
		for i := 1; i < len(args); i++ {
			opt := strings.ToLower(string(args[i]))
			switch {
			case opt == "auth" && i+2 < len(args):
				// No password is set, as in a redis-server whose default
				// user has nopass: any password of "default" is accepted.
				if string(args[i+1]) != "default" {
					ss.errorf("WRONGPASS invalid username-password pair or user is disabled.")
					return
				}
				i += 2
			case opt == "setname" && i+1 < len(args):
				name, setName = args[i+1], true
				i++
			default:
				ss.errorf("ERR Syntax error in HELLO option '%s'", args[i])
				return
			}
		}
		if setName {
			if err := ss.setName(name); err != "" {
				ss.errorf("%s", err)
				return
			}
		}
	}
	w := &ss.held
	resp.WriteArray(w, 14)
	resp.WriteBulk(w, []byte("server"))
	resp.WriteBulk(w, []byte("kvserver"))
	resp.WriteBulk(w, []byte("version"))
	resp.WriteBulk(w, []byte("7.0.0")) // the Redis whose replies kvserver's follow, for clients that check

	resp.WriteBulk(w, []byte("proto"))
	resp.WriteInt(w, 2)
	resp.WriteBulk(w, []byte("id"))
	resp.WriteInt(w, ss.id)
	resp.WriteBulk(w, []byte("mode"))
	resp.WriteBulk(w, []byte("standalone"))
	resp.WriteBulk(w, []byte("role"))
	resp.WriteBulk(w, []byte("master"))
	resp.WriteBulk(w, []byte("modules"))
	resp.WriteArray(w, 0)
}

// cmdCommand answers COMMAND, COMMAND COUNT, COMMAND LIST, COMMAND INFO
// [name ...] and COMMAND DOCS [name ...], in Redis 7's shapes.
func (ss *session) cmdCommand(args [][]byte) {
	w := &ss.held
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(args) == 0 {
		resp.WriteArray(w, len(names))
		for _, n := range names {
			commands[n].writeInfo(w)
		}
		return
	}
	sub := strings.ToLower(string(args[0]))
	switch {
	case sub == "count" && len(args) == 1:
		resp.WriteInt(w, int64(len(commands)))
	case sub == "list" && len(args) == 1:
		resp.WriteArray(w, len(names))
		for _, n := range names {
			resp.WriteBulk(w, []byte(n))
		}
	case sub == "info":
		if len(args) > 1 {
			names = names[:0]
			for _, a := range args[1:] {
				names = append(names, strings.ToLower(string(a)))
			}
		}
		resp.WriteArray(w, len(names))
		for _, n := range names {
			if c := commands[n]; c != nil {
				c.writeInfo(w)
			} else {
				resp.WriteNull(w)
			}
		}
	case sub == "docs":
		if len(args) > 1 {
			names = names[:0]
			for _, a := range args[1:] {
				if n := strings.ToLower(string(a)); commands[n] != nil {
					names = append(names, n)
				}
			}
		}
		resp.WriteArray(w, 2*len(names))
		for _, n := range names {
			c := commands[n]
			resp.WriteBulk(w, []byte(n))
			resp.WriteArray(w, 8)
			for _, kv := range [][2]string{{"summary", c.summary}, {"since", c.since}, {"group", c.group}, {"complexity", c.complexity}} {
				resp.WriteBulk(w, []byte(kv[0]))
				resp.WriteBulk(w, []byte(kv[1]))
			}
		}
	case sub == "count" || sub == "list":
		ss.errorf("ERR wrong number of arguments for 'command|%s' command", sub)
	default:
		ss.errorf("ERR unknown subcommand '%s'. Try COMMAND HELP.", args[0])
	}
}

// writeInfo writes the command's COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs, subcommands.
func (c *command) writeInfo(w resp.Writer) {
	resp.WriteArray(w, 10)
	resp.WriteBulk(w, []byte(c.name))
	resp.WriteInt(w, int64(c.arity))
	resp.WriteArray(w, len(c.flags))
	for _, f := range c.flags {
		resp.WriteSimple(w, f)
	}
	resp.WriteInt(w, int64(c.first))
	resp.WriteInt(w, int64(c.last))
	resp.WriteInt(w, int64(c.step))
	resp.WriteArray(w, 0)
	resp.WriteArray(w, 0)
	resp.WriteArray(w, 0)
	resp.WriteArray(w, 0)
}

// cmdConfig answers CONFIG RESETSTAT and CONFIG GET for the few
// parameters clients ask for (redis-benchmark asks for save and
// appendonly).
func (ss *session) cmdConfig(args [][]byte) {
	sub := strings.ToLower(string(args[0]))
	if sub == "resetstat" && len(args) == 1 {
		ss.s.stats.reset()
		resp.WriteSimple(&ss.held, "OK")
		return
	}
	if sub == "get" && len(args) == 2 {
		param := strings.ToLower(string(args[1]))
		var value string
		switch param {
		case "save":
			value = ""
		case "appendonly":
			value = "yes" // every policy appends each write to a log (see appendfsync)
		case "appendfsync":
			value = appendfsync(ss.s.policy)
		default:
			resp.WriteArray(&ss.held, 0)
			return
		}
		resp.WriteArray(&ss.held, 2)
		resp.WriteBulk(&ss.held, []byte(param))
		resp.WriteBulk(&ss.held, []byte(value))
		return
	}
	ss.errorf("ERR kvserver supports CONFIG RESETSTAT and CONFIG GET save|appendonly|appendfsync only")
}

// appendfsync is CONFIG GET appendfsync under policy p: Redis's word
// where the promise is Redis's, else kv's own policy. always and group
// acknowledge a write after an fdatasync that covers it, as Redis's
// appendfsync always does. Redis's everysec and no hand every write to
// the OS before replying, so a process kill loses nothing; kv's batch:N,
// periodic:D and none keep acknowledged writes in a buffer in the process
// (engine: the write buffer), which a kill loses, so they are named as
// what they are.
func appendfsync(p engine.SyncPolicy) string {
	if p.Mode == engine.SyncAlways || p.Mode == engine.SyncGroup {
		return "always"
	}
	return p.String()
}

// cmdInfo answers INFO [section].
func (ss *session) cmdInfo(args [][]byte) {
	section := ""
	if len(args) > 0 {
		section = strings.ToLower(string(args[0]))
	}
	resp.WriteBulk(&ss.held, []byte(ss.s.info(section)))
}

// quoteArgs words the start of a command's arguments as Redis does in
// its unknown-command error.
func quoteArgs(args [][]byte) string {
	var b strings.Builder
	for i, a := range args {
		if i == 3 {
			break
		}
		if len(a) > 20 {
			a = a[:20]
		}
		b.WriteString("'" + string(a) + "' ")
	}
	return b.String()
}
