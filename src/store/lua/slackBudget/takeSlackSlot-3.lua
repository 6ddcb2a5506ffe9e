--[[
  takeSlackSlot-3: take the next slot of one Slack rate budget (a method's, or a method's in one
  channel), shared by every process of the installation. A GCRA: `tat` is the theoretical arrival time
  of the next call; a call may go once `now >= tat - (burst - headroom) * interval`. Slots are taken in
  line: a caller that may wait joins the queue by rank (priority, then arrival) and gets a slot only when
  nobody ranked before it waits; a caller that may not wait (`member` '') gets one only when nobody waits.
  Time is Redis's own (TIME), so every process counts on one clock.

  KEYS[1] tat (string, ms)   KEYS[2] queue (zset member -> rank)   KEYS[3] last poll of each member (zset)
  ARGV[1] interval ms between calls at the steady rate
  ARGV[2] burst: calls tolerated at once above the steady rate
  ARGV[3] headroom: slots of the burst this caller must leave free (0 for answers and cards)
  ARGV[4] member: the waiting caller's id, '' for a caller that does not wait in line
  ARGV[5] rank of the member (lower goes first)
  ARGV[6] horizon ms: a slot may be granted this far ahead (the caller sleeps until it)
  ARGV[7] stale ms: a member that has not polled for this long left (its process died) and leaves the line

  Returns {1, wait ms} when a slot was taken (call after waiting that long), or {0, wait ms}: no slot
  now; `wait` is when the next slot of this budget opens.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local headroom = tonumber(ARGV[3])
local member = ARGV[4]
local rank = tonumber(ARGV[5])
local horizon = tonumber(ARGV[6])

for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[7]))) do
  redis.call('ZREM', KEYS[2], gone)
  redis.call('ZREM', KEYS[3], gone)
end

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local wait = tat - (burst - headroom) * interval - now
if wait < 0 then wait = 0 end

local ahead
if member == '' then
  ahead = redis.call('ZCARD', KEYS[2])
else
  ahead = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. rank)
end
local keep = math.ceil(tat - now + interval) + 60000
if ahead == 0 and wait <= horizon then
  redis.call('SET', KEYS[1], tat + interval, 'PX', keep)
  if member ~= '' then
    redis.call('ZREM', KEYS[2], member)
    redis.call('ZREM', KEYS[3], member)
  end
  return {1, wait}
end
if member ~= '' then
  redis.call('ZADD', KEYS[2], 'NX', rank, member)
  redis.call('ZADD', KEYS[3], now, member)
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('PEXPIRE', KEYS[3], keep)
end
return {0, wait}
