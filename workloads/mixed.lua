-- mixed: the everyday mix of a key-value store. Each unit is one
-- operation: 50% get, 30% put, 10% del, 10% a short range of 10 keys.
-- Keys are "k" and a zero-padded number below ctx.items, so a range
-- in key order is a range of numbers.
local fmt, r = string.format, math.random

local function key(i) return fmt("k%010d", i) end

return {
  name = "mixed",
  -- load: every worker fills its own shard of the keys at once.
  load = function(ctx)
    local v = string.rep("v", ctx.valuebytes)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(key(i), v) end
  end,
  run = function(ctx)
    local i, x = r(0, ctx.items - 1), r()
    if x < 0.5 then
      kv.get(key(i))
    elseif x < 0.8 then
      kv.put(key(i), string.rep("w", ctx.valuebytes))
    elseif x < 0.9 then
      kv.del(key(i))
    else
      kv.range(key(i), key(i + 10))
    end
  end,
}
