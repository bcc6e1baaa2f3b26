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

-- Assigns each thread a number (1, 2, ...) and keeps the threads for `done`.
M.threads = {}
local next_id = 0
function M.setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
   table.insert(M.threads, thread)
end

return M
