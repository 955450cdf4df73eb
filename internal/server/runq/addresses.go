package runq

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Engines named by an address.
//
// A line's -engine resp://HOST:PORT or postgres://USER@HOST:PORT/DB makes
// the server connect to that address and write to it. A server that serves
// only its owner (on loopback, without a token) lets a line name any
// server on this machine: every address the host resolves to must be a
// loopback one. A server that serves others (a run token, a room, a bind
// beyond loopback) lets a line name only the addresses its instructor
// listed when starting it (labserver serve -allow-engine ADDR): a reader
// must not make the server reach, probe or scan what they choose, on this
// machine or any other. The throwaway engines (redis, postgres, kvserver),
// which the run starts and stops itself, need no address and stay
// available everywhere. A listed address is allowed in either kind of
// server, wherever its host is.

// Addresses says which engines named by an address a server's lines may
// name. The zero value is a server that serves only its owner and lists
// no address.
type Addresses struct {
	// ServesOthers is set when the server serves others than its owner
	// (a run token, a room, a bind beyond loopback): a line may then
	// name only an address in Allowed.
	ServesOthers bool
	// Allowed are the addresses the instructor listed (-allow-engine), as
	// AddressKey writes them.
	Allowed []string
}

// addressSchemes are the -engine schemes that name a server, with the
// default port of each (0: the URL must give one).
var addressSchemes = map[string]int{"resp": 0, "postgres": 5432, "postgresql": 5432}

// AddressKey writes an -engine value that names a server in one form, so
// that a line's address can be compared with the listed ones: the scheme
// (postgresql:// as postgres://), the user, the host in lower case, the
// port (PostgreSQL's 5432 when none is given) and the database (the
// user's name when none is given). resp://'s ?conns=N, which chooses how
// the client connects and not where, is left out. An error says what is
// wrong with the value; the engine's own parser, when the line is
// parsed, says more.
func AddressKey(engine string) (string, error) {
	u, err := url.Parse(engine)
	if err != nil {
		return "", fmt.Errorf("-engine %s: not a URL", engine)
	}
	defPort, ok := addressSchemes[u.Scheme]
	if !ok {
		return "", fmt.Errorf("-engine %s: not an address; allowed: resp://HOST:PORT, postgres://USER@HOST:PORT/DB", engine)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", fmt.Errorf("-engine %s: the address has no host", engine)
	}
	if port == "" && defPort > 0 {
		port = strconv.Itoa(defPort)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("-engine %s: the address needs a port between 1 and 65535", engine)
	}
	hp := net.JoinHostPort(host, port)
	if u.Scheme == "resp" {
		return "resp://" + hp, nil
	}
	user := u.User.Username()
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		db = user
	}
	return "postgres://" + user + "@" + hp + "/" + db, nil
}

// lookupTimeout bounds resolving a host name while a line is checked.
const lookupTimeout = 2 * time.Second

// resolveHost returns the addresses host resolves to; a variable so that
// tests can answer for a name.
var resolveHost = func(ctx context.Context, host string) ([]net.IPAddr, error) {
	return net.DefaultResolver.LookupIPAddr(ctx, host)
}

// checkEngineAddress refuses an engine named by an address that the
// server may not reach (see Addresses). Other engines pass.
func checkEngineAddress(engine string, a Addresses) error {
	sch, _, ok := strings.Cut(engine, "://")
	if !ok {
		return nil
	}
	if _, ok := addressSchemes[sch]; !ok {
		return nil // not an address: the engine's own parser decides
	}
	key, err := AddressKey(engine)
	if err != nil {
		return err
	}
	if slices.Contains(a.Allowed, key) {
		return nil
	}
	if a.ServesOthers {
		if len(a.Allowed) == 0 {
			return fmt.Errorf("-engine %s: this server serves a class, and a line may name only the servers its instructor listed (labserver serve -allow-engine ADDR); none are listed. The throwaway engines redis, postgres and kvserver need no address", engine)
		}
		return fmt.Errorf("-engine %s: this server serves a class, and a line may name only the servers its instructor listed: %s. The throwaway engines redis, postgres and kvserver need no address", engine, strings.Join(a.Allowed, ", "))
	}
	u, _ := url.Parse(engine) // AddressKey parsed it
	return checkLoopback(engine, u.Hostname())
}

// checkLoopback refuses host unless every address it names is a loopback
// one: an IP address is checked as it is, a name by every address it
// resolves to (a name that resolves to this machine and another is
// refused).
func checkLoopback(engine, host string) error {
	refuse := func(why string) error {
		return fmt.Errorf("-engine %s: %s; the server connects only to servers on this machine (127.0.0.1, ::1 or localhost) unless it was started with -allow-engine naming this address", engine, why)
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return refuse(host + " is not this machine")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	addrs, err := resolveHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return refuse("the host name " + host + " could not be resolved")
	}
	for _, ad := range addrs {
		if !ad.IP.IsLoopback() {
			return refuse(fmt.Sprintf("%s resolves to %s, which is not this machine", host, ad.IP))
		}
	}
	return nil
}

// ParseAllowedEngines reads one -allow-engine value: one address or a
// comma list, each an engine named by an address, and returns each as
// AddressKey writes it. A password in an address is refused (the flag is
// visible in the process list).
func ParseAllowedEngines(v string) ([]string, error) {
	var keys []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if u, err := url.Parse(e); err == nil {
			if _, has := u.User.Password(); has {
				return nil, fmt.Errorf("%s: an address here holds no password", u.Redacted())
			}
			if u.RawQuery != "" && !strings.HasPrefix(e, "resp://") {
				return nil, fmt.Errorf("%s: an address takes no ?parameters", e)
			}
		}
		k, err := AddressKey(e)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%q: want resp://HOST:PORT or postgres://USER@HOST:PORT/DB (repeat the flag or separate with commas)", v)
	}
	return keys, nil
}
