--[[
  decideBudgetAsk-1: answer a run's ask for more budget, first answer wins (compare-and-set on status and
  round): a double click, two deciders at once, or a click racing the expiry timer decide it once.
  A grant or refusal that arrives after the ask's expiry expires it instead.

  KEYS[1] budget ask record
  ARGV[1] round the click or timer is about   ARGV[2] granted | refused | expired | cancelled
  ARGV[3] who decided ('' for the timer)      ARGV[4] now (ms)

  Returns {outcome, field, value, ...} with the record as stored now, outcome 1 (this answer decided it),
  0 (decided before: unchanged) or 2 (came after the expiry: expired now); or -1 (not_found),
  -15 (stale_round: the card is of an earlier round).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'round') ~= ARGV[1] then return -15 end
local outcome = 0
if redis.call('HGET', KEYS[1], 'status') == 'pending' then
  local late = (ARGV[2] == 'granted' or ARGV[2] == 'refused')
    and tonumber(ARGV[4]) >= tonumber(redis.call('HGET', KEYS[1], 'expiresAt'))
  if late then
    redis.call('HSET', KEYS[1], 'status', 'expired', 'decidedAt', ARGV[4])
    outcome = 2
  else
    redis.call('HSET', KEYS[1], 'status', ARGV[2], 'decidedBy', ARGV[3], 'decidedAt', ARGV[4])
    outcome = 1
  end
end
local result = {outcome}
for _, item in ipairs(redis.call('HGETALL', KEYS[1])) do result[#result + 1] = item end
return result
