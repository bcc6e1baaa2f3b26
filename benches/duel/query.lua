-- One query (DUEL_QUERY: the query string without the SAS, e.g. `$filter=...`). With
-- DUEL_PAGES=all it runs to its end: a reply with continuation headers is followed by the
-- next page's request, and a "query" counts as done at its last page; otherwise (the
-- default, `first`) every request is the query's first page. `done` prints `DUEL queries=N pages=M` so the
-- duel reports whole queries per second (both servers are counted the same way).
package.path = os.getenv("DUEL_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")
local table_name = os.getenv("DUEL_TABLE") or "bench"
local query = os.getenv("DUEL_QUERY") or ""
local headers = common.headers()
local all_pages = os.getenv("DUEL_PAGES") == "all"
local base = string.format("/%s/%s()?%s", common.account, table_name, common.sas)
if query ~= "" then base = base .. "&" .. query end

local next_path = nil
queries = 0
pages = 0

setup = common.setup

request = function()
   return wrk.format("GET", next_path or base, headers)
end

response = function(status, resp_headers, body)
   pages = pages + 1
   local npk, nrk
   for k, v in pairs(resp_headers) do
      local l = string.lower(k)
      if l == "x-ms-continuation-nextpartitionkey" then npk = v end
      if l == "x-ms-continuation-nextrowkey" then nrk = v end
   end
   if all_pages and status == 200 and npk then
      next_path = base .. "&NextPartitionKey=" .. npk
      if nrk then next_path = next_path .. "&NextRowKey=" .. nrk end
   else
      next_path = nil
      queries = queries + 1
   end
end

done = function(summary, latency, requests)
   local q, p = 0, 0
   for _, t in ipairs(common.threads) do
      q = q + t:get("queries")
      p = p + t:get("pages")
   end
   io.write(string.format("DUEL queries=%d pages=%d\n", q, p))
end
