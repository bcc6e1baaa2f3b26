-- Shared by the duel's wrk scripts (scripts/duel.sh): the account SAS, the headers both
-- servers get, and per-thread ids assigned in `setup` (wrk runs one Lua state per thread).
local M = {}

M.sas = os.getenv("DUEL_SAS") or error("DUEL_SAS is not set")
M.account = os.getenv("DUEL_ACCOUNT") or "devstoreaccount1"

function M.headers(extra)
   local h = {
      ["Accept"] = "application/json;odata=nometadata",
      ["x-ms-version"] = "2019-02-02",
      ["DataServiceVersion"] = "3.0",
   }
   for k, v in pairs(extra or {}) do h[k] = v end
   return h
end

-- The keys `tableq gen` writes (src/datagen.rs): PartitionKey `p` + the partition number
-- with as many digits as `partitions - 1` has, at least 3; RowKey `r` + 8 digits.
function M.partition_key(p, partitions)
   local width = math.max(3, #tostring(partitions - 1))
   return string.format("p%0" .. width .. "d", p)
end

function M.row_key(r)
   return string.format("r%08d", r)
end

-- Assigns each thread a number (1, 2, ...) and keeps the threads for `done`.
M.threads = {}
local next_id = 0
function M.setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
   table.insert(M.threads, thread)
end

return M
