--[[
  updateIfExists-1: set hash fields of a record that exists; never creates one (a late update must
  not leave a partial record without a TTL behind).

  KEYS[1] hash
  ARGV[1..] field, value, field, value, ...

  Returns 1, or -1 (not_found).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
