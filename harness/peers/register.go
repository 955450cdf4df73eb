package peers

import "kvlab/harness"

// respUnordered is why a RESP server's store cannot scan keys in order.
const respUnordered = "a RESP server's keys are reached by name (SCAN visits them in no order)"

func init() {
	harness.RegisterEngine("bbolt", OpenBbolt)
	harness.RegisterEngine("pebble", OpenPebble)
	harness.RegisterEngine("sqlite", OpenSQLite)
	harness.RegisterEngine("redis", OpenRedis)
	harness.MarkUnordered("redis", respUnordered)
	harness.RegisterScheme("resp", "resp://HOST:PORT", respUnordered, openRESPScheme)
	harness.MarkPipelining("redis")
	harness.MarkPipelining("resp://")
	harness.RegisterEngine("postgres", OpenPostgres)
	harness.RegisterScheme("postgres", "postgres://USER@HOST:PORT/DB", "", openPostgresScheme)
	// postgresql:// is the other spelling libpq and pgx accept.
	harness.RegisterReplicated("pg-sync", harness.ReplicatedEngine{Open: OpenPgSync, Syncs: pgSyncNames(), SyncHelp: pgSyncHelp, Replicas: []int{1, 2}, Quorum: true})
	harness.RegisterReplicated("etcd", harness.ReplicatedEngine{Open: OpenEtcd, Syncs: []string{"always"}, SyncHelp: "always only (a Put returns once a majority fsynced it)", Replicas: []int{2, 4}})
	harness.RegisterScheme("postgresql", "postgresql://USER@HOST:PORT/DB", "", openPostgresScheme)
}
