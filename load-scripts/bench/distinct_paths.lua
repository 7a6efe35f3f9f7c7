-- Failing requests over many distinct raw paths, for the memory row: each thread sends
-- GET /miss/<n> (404, no route) with n cycling over `distinct` values, at most `quota`
-- requests, then idles until the harness stops wrk (wrk's duration cannot be a count). The
-- quota is counted where wrk asks whether to send (delay()), so requests in flight on
-- several connections cannot overshoot it.
-- Arguments: quota per thread, distinct paths, thread count.

local threads = {}

function setup(thread)
   thread:set("thread_id", #threads)
   table.insert(threads, thread)
end

function init(args)
   quota = tonumber(args[1])
   distinct = tonumber(args[2])
   stride = tonumber(args[3])
   built, approved = 0, 0
end

function delay()
   if approved >= quota then
      return 3600 * 1000
   end
   approved = approved + 1
   return 0
end

function request()
   local n = (thread_id + built * stride) % distinct
   built = built + 1
   return wrk.format("GET", "/miss/" .. n)
end
