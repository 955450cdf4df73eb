-- scan: ordered reads. Each unit scans forward from a random key with
-- kv.scan and stops after 50 keys (the function returns true to stop);
-- a scan counts as one op however many keys it visits.
local fmt, r = string.format, math.random

return {
  name = "scan",
  load = function(ctx)
    local v = string.rep("s", ctx.valuebytes)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(fmt("s%010d", i), v) end
  end,
  run = function(ctx)
    local n = 0
    kv.scan(fmt("s%010d", r(0, ctx.items - 1)), "t", function(k, v)
      n = n + 1
      return n >= 50
    end)
  end,
}
