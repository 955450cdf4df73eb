-- ycsb-c: YCSB workload C, read only: 100% read.
-- Keys are drawn uniformly (YCSB's default is zipfian: a few hot keys;
-- uniform spreads the reads over the whole table, the harder case for a
-- cache). A unit is one operation, except that a read-modify-write
-- counts its get and its put.
local fmt, r = string.format, math.random

local function key(i) return fmt("user%010d", i) end
local function val(ctx) return string.rep("f", ctx.valuebytes) end
-- inserted: this worker's next new key, above the loaded ones (each
-- worker inserts into its own stride so two never write the same key).
local inserted

return {
  name = "ycsb-c",
  load = function(ctx)
    local v = val(ctx)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(key(i), v) end
  end,
  run = function(ctx)
    inserted = inserted or (ctx.items + ctx.thread * 100000000)
    local i, x = r(0, ctx.items - 1), r()
    kv.get(key(i))
  end,
}
