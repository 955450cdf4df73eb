-- valuesize: the same put/get mix at four value sizes. The sweep field
-- makes the harness run the script once per value of ctx.valuebytes and
-- report each as its own line: where does the engine's cost stop being
-- per operation and start being per byte?
local fmt, r = string.format, math.random

return {
  name = "valuesize",
  sweep = { param = "valuebytes", values = { 64, 1024, 16384, 65536 } },
  load = function(ctx)
    local v = string.rep("z", ctx.valuebytes)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(fmt("z%010d", i), v) end
  end,
  run = function(ctx)
    local k = fmt("z%010d", r(0, ctx.items - 1))
    if r() < 0.5 then kv.get(k) else kv.put(k, string.rep("y", ctx.valuebytes)) end
  end,
}
