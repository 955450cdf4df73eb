-- cart: a shopping cart per user. Every line of user u's cart is the key
-- "cart/<u>/<line>", so one user's cart is one range of keys.
--   view     (70%): one range over the user's prefix
--   add      (20%): one put of a new line
--   checkout (10%): view the cart, then delete each line (one del each)
-- A unit is one of these; a checkout is many primitive ops, which is why
-- the units per second (wu/s) and ops per second differ.
local fmt, r = string.format, math.random

local function prefix(u) return fmt("cart/%06d/", u) end
-- "cart/000007/" up to, not including, "cart/0000070": every key of the prefix.
local function stop(u) return fmt("cart/%06d0", u) end

return {
  name = "cart",
  load = function(ctx)
    local v = string.rep("i", ctx.valuebytes)
    for u = ctx.thread, ctx.users - 1, ctx.threads do
      for line = 1, ctx.items do kv.put(prefix(u) .. fmt("%06d", line), v) end
    end
  end,
  run = function(ctx)
    local u, x = r(0, ctx.users - 1), r()
    if x < 0.7 then
      kv.range(prefix(u), stop(u))
    elseif x < 0.9 then
      kv.put(prefix(u) .. fmt("%06d", r(1, 1000000)), string.rep("i", ctx.valuebytes))
    else
      for _, row in ipairs(kv.range(prefix(u), stop(u))) do kv.del(row.key) end
    end
  end,
}
