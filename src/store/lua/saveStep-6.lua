--[[
  saveStep-6: persist one step: append the new messages and evidence, rewrite the header. Refused
  unless the caller holds the lease and its counts of persisted messages and evidence are current,
  so a stale worker can neither overwrite nor fork the history.
  When ARGV[10] > 0 the run has finished: every key of the run gets that TTL (retention).

  KEYS[1] header   KEYS[2] messages   KEYS[3] evidence   KEYS[4] lease   KEYS[5] trace
  KEYS[6] approvals set
  ARGV[1] fence
  ARGV[2] expected persisted message count   ARGV[3] expected persisted evidence count
  ARGV[4] nonce of this call (a resend of the same call after a lost reply returns the stored counts)
  ARGV[5] header state JSON
  ARGV[6] status   ARGV[7] step   ARGV[8] stopReason ('' for none)   ARGV[9] updatedAt (ms)
  ARGV[10] retention ms (> 0 only when the run has finished)
  ARGV[11] run key base `<p>:run:{<runId>}:`
  ARGV[12] number of new messages m, ARGV[13 .. 12+m] messages JSON, the rest new evidence JSON

  Returns {messageCount, evidenceCount, cancelRequested (0|1)}, or
  -1 (not_found), -2 (lease_lost), -3 (stale_fence), -5 (count_mismatch).
]]
-- @include check-fence
-- @include follow-header-ttl
-- @include expire-run-keys
local header, messages, evidence = KEYS[1], KEYS[2], KEYS[3]
local stored = redis.call('HMGET', header, 'messages', 'evidence', 'saveNonce', 'cancel')
if not stored[1] then return -1 end
local cancel = stored[4] and 1 or 0
if stored[3] == ARGV[4] then return {tonumber(stored[1]), tonumber(stored[2]), cancel} end
local refused = checkFence(KEYS[4], ARGV[1])
if refused ~= 0 then return refused end
if stored[1] ~= ARGV[2] or stored[2] ~= ARGV[3] then return -5 end

local m = tonumber(ARGV[12])
local e = #ARGV - 12 - m
local messageCount, evidenceCount = tonumber(ARGV[2]), tonumber(ARGV[3])
if m > 0 then messageCount = redis.call('RPUSH', messages, unpack(ARGV, 13, 12 + m)) end
if e > 0 then
  evidenceCount = redis.call('RPUSH', evidence, unpack(ARGV, 13 + m, #ARGV))
  followHeaderTtl(header, evidence)
end
redis.call('HSET', header,
  'state', ARGV[5], 'status', ARGV[6], 'step', ARGV[7], 'stopReason', ARGV[8], 'updatedAt', ARGV[9],
  'messages', messageCount, 'evidence', evidenceCount, 'saveNonce', ARGV[4])
local retention = tonumber(ARGV[10])
if retention > 0 then
  redis.call('HSET', header, 'finishedAt', ARGV[9])
  expireRunKeys({header, messages, evidence, KEYS[5]}, KEYS[6], ARGV[11], retention)
end
return {messageCount, evidenceCount, cancel}
