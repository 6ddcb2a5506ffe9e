--[[
  saveStep-7: persist one step: append the new messages, evidence, compaction records and trace
  entries, rewrite the changing part of the header. Refused unless the caller holds the lease and its
  counts of persisted messages, evidence and compactions are current, so a stale worker can neither
  overwrite nor fork the history (nor add to the trace). The fixed part of the header (field `state`,
  written by createRun) is never touched.
  When ARGV[11] > 0 the run has finished: every key of the run gets that TTL (retention).

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence   KEYS[4] lease   KEYS[5] trace
  KEYS[6] approvals set   KEYS[7] compactions
  ARGV[1] fence
  ARGV[2] expected persisted message count   ARGV[3] expected persisted evidence count
  ARGV[4] nonce of this call (a resend of the same call after a lost reply returns the stored counts)
  ARGV[5] changing part JSON (field `progress`)
  ARGV[6] status   ARGV[7] step   ARGV[8] stopReason ('' for none)   ARGV[9] updatedAt (ms)
  ARGV[10] pause: approval ids of the pending gated calls, space-separated ('' for none)
  ARGV[11] retention ms (> 0 only when the run has finished)
  ARGV[12] run key base `<p>:run:{<runId>}:`
  ARGV[13] trace entries kept (older ones are trimmed)
  ARGV[14] number of new messages m   ARGV[15] number of new evidence records e
  ARGV[16] expected persisted compaction count   ARGV[17] number of new compaction records c
  ARGV[18 .. 17+m] message rows, ARGV[18+m .. 17+m+e] evidence rows,
  ARGV[18+m+e .. 17+m+e+c] compaction records, the rest trace entries

  Returns {messageCount, evidenceCount, cancelRequested (0|1), compactionCount}, or
  -1 (not_found), -2 (lease_lost), -3 (stale_fence), -5 (count_mismatch).
]]
-- @include check-fence
-- @include follow-header-ttl
-- @include expire-run-keys
local header, messages, evidence, trace, compactions = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[7]
local stored = redis.call('HMGET', header, 'messages', 'evidence', 'saveNonce', 'cancel', 'compactions')
if not stored[1] then return -1 end
local cancel = stored[4] and 1 or 0
local storedCompactions = stored[5] or '0'
if stored[3] == ARGV[4] then
  return {tonumber(stored[1]), tonumber(stored[2]), cancel, tonumber(storedCompactions)}
end
local refused = checkFence(KEYS[4], ARGV[1])
if refused ~= 0 then return refused end
if stored[1] ~= ARGV[2] or stored[2] ~= ARGV[3] or storedCompactions ~= ARGV[16] then return -5 end

local m, e, c = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[17])
local first = 18
local t = #ARGV - (first - 1) - m - e - c
local messageCount, evidenceCount = tonumber(ARGV[2]), tonumber(ARGV[3])
local compactionCount = tonumber(ARGV[16])
-- A list created here (rather than by createRun) takes the header's TTL.
if m > 0 then
  messageCount = redis.call('RPUSH', messages, unpack(ARGV, first, first - 1 + m))
  if messageCount == m then followHeaderTtl(header, messages) end
end
if e > 0 then
  evidenceCount = redis.call('RPUSH', evidence, unpack(ARGV, first + m, first - 1 + m + e))
  if evidenceCount == e then followHeaderTtl(header, evidence) end
end
if c > 0 then
  compactionCount = redis.call('RPUSH', compactions, unpack(ARGV, first + m + e, first - 1 + m + e + c))
  if compactionCount == c then followHeaderTtl(header, compactions) end
end
if t > 0 then
  local length = redis.call('RPUSH', trace, unpack(ARGV, first + m + e + c, #ARGV))
  if length == t then followHeaderTtl(header, trace) end
  local keep = tonumber(ARGV[13])
  if length > keep then redis.call('LTRIM', trace, -keep, -1) end
end
redis.call('HSET', header,
  'progress', ARGV[5], 'status', ARGV[6], 'step', ARGV[7], 'stopReason', ARGV[8], 'updatedAt', ARGV[9],
  'pause', ARGV[10], 'messages', messageCount, 'evidence', evidenceCount, 'compactions', compactionCount,
  'saveNonce', ARGV[4])
local retention = tonumber(ARGV[11])
if retention > 0 then
  redis.call('HSET', header, 'finishedAt', ARGV[9])
  expireRunKeys({header, messages, evidence, trace}, KEYS[6], ARGV[12], retention)
end
return {messageCount, evidenceCount, cancel, compactionCount}
