-- Webhook-like mixed load for wrk: per request 70% /ok, 25% /handled, 5% /panic.
--
-- Every request built is counted by path, and done() prints the totals over all threads as
--   SENT total=N ok=N handled=N panic=N
-- which the harness reconciles against the ledger. wrk ends a run abruptly, so a request
-- written in its last instant may be reset before the server reads it; to count exactly, the
-- script stops sending after a window (argument 1, seconds) and the rest of the run is a quiet
-- tail in which every request in flight completes. wrk calls request() once on the first
-- thread's state before the run to check what it returns; that request is never sent, so it
-- is not counted.

local threads = {}

function setup(thread)
   thread:set("thread_id", #threads + 1)
   table.insert(threads, thread)
end

local function uptime()
   local file = io.open("/proc/uptime")
   local seconds = file:read("*n")
   file:close()
   return seconds
end

function init(args)
   math.randomseed(1000 + thread_id)
   sent_ok, sent_handled, sent_panic = 0, 0, 0
   deadline = uptime() + tonumber(args[1])
   quiet = false
   calls = 0
   checked = thread_id ~= 1
end

function delay()
   calls = calls + 1
   -- /proc/uptime has 10 ms resolution; reading it every 64 requests is cheap enough.
   if not quiet and calls % 64 == 0 and uptime() >= deadline then
      quiet = true
   end
   if quiet then
      return 3600 * 1000
   end
   return 0
end

function request()
   if not checked then
      checked = true
      return wrk.format("GET", "/ok")
   end
   local roll = math.random(100)
   local path
   if roll <= 70 then
      sent_ok = sent_ok + 1
      path = "/ok"
   elseif roll <= 95 then
      sent_handled = sent_handled + 1
      path = "/handled"
   else
      sent_panic = sent_panic + 1
      path = "/panic"
   end
   return wrk.format("GET", path)
end

function done(summary, latency, requests)
   local ok, handled, panic = 0, 0, 0
   for _, thread in ipairs(threads) do
      ok = ok + thread:get("sent_ok")
      handled = handled + thread:get("sent_handled")
      panic = panic + thread:get("sent_panic")
   end
   io.write(string.format("SENT total=%d ok=%d handled=%d panic=%d\n",
      ok + handled + panic, ok, handled, panic))
end
