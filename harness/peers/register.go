package peers

import "kvlab/harness"

// respUnordered is why a RESP server's store cannot scan keys in order.
const respUnordered = "a RESP server's keys are reached by name (SCAN visits them in no order)"

func init() {
	harness.RegisterEngine("bbolt", OpenBbolt)
	harness.RegisterEngine("pebble", OpenPebble)
	harness.RegisterEngine("sqlite", OpenSQLite)
	harness.RegisterEngineContext("redis", openRedis)
	harness.MarkUnordered("redis", respUnordered)
	harness.RegisterSchemeContext("resp", "resp://HOST:PORT", respUnordered, openRESPScheme)
	harness.MarkPipelining("redis")
	harness.MarkPipelining("resp://")
	harness.RegisterEngineContext("postgres", openPostgres)
	harness.RegisterSchemeContext("postgres", "postgres://USER@HOST:PORT/DB", "", openPostgresScheme)
	// postgresql:// is the other spelling libpq and pgx accept.
	harness.RegisterSchemeContext("postgresql", "postgresql://USER@HOST:PORT/DB", "", openPostgresScheme)
	harness.RegisterReplicated("pg-sync", harness.ReplicatedEngine{Open: OpenPgSync, Syncs: pgSyncNames(), SyncHelp: pgSyncHelp, Replicas: []int{1, 2}, Quorum: true})
	harness.RegisterReplicated("etcd", harness.ReplicatedEngine{Open: OpenEtcd, Syncs: []string{"always"}, SyncHelp: "always only (a Put returns once a majority fsynced it)", Replicas: []int{2, 4}})
	harness.MeasureRTT = probeRTT // the replication model's round trip
}
