-- batch: multi-key reads and writes of ctx.batch keys (-batch) each.
-- Half the units write B keys with one kv.mput, half read B keys with one
-- kv.mget. Each key counts as one op, so ops/s is B times wu/s. On kv an
-- mput is one atomic batch (one record, one fdatasync under always).
local fmt, r = string.format, math.random

return {
  name = "batch",
  batched = true,
  load = function(ctx)
    local v = string.rep("b", ctx.valuebytes)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(fmt("b%010d", i), v) end
  end,
  run = function(ctx)
    local first = r(0, ctx.items - 1)
    if r() < 0.5 then
      local rows, v = {}, string.rep("c", ctx.valuebytes)
      for j = 1, ctx.batch do rows[j] = { key = fmt("b%010d", (first + j) % ctx.items), val = v } end
      kv.mput(rows)
    else
      local keys = {}
      for j = 1, ctx.batch do keys[j] = fmt("b%010d", (first + j) % ctx.items) end
      kv.mget(keys)
    end
  end,
}
