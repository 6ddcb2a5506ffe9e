-- Gives `key` the header's TTL when the header has one and the key has none, so a key created late
-- (first evidence, first trace entry, a ledger entry) never outlives its run.
local function followHeaderTtl(headerKey, key)
  local ttl = redis.call('PTTL', headerKey)
  if ttl > 0 and redis.call('PTTL', key) == -1 then
    redis.call('PEXPIRE', key, ttl)
  end
end
