package peers

import "kvlab/harness"

func init() {
	harness.RegisterEngine("bbolt", OpenBbolt)
	harness.RegisterEngine("pebble", OpenPebble)
	harness.RegisterEngine("sqlite", OpenSQLite)
}
