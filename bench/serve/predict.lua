-- wrk script: POST one predict request body (read from the file named by the environment
-- variable TERN_WRK_BODY) to the URL wrk was given, and tally statuses and response bodies.
-- At the end it prints one line per status ("status 200 1234") and per distinct body
-- ("body 1234 <body>"), so a caller can check that every response came from a known version.
-- Usage: TERN_WRK_BODY=req.json wrk -t2 -c8 -d5s -s bench/serve/predict.lua http://127.0.0.1:8501/v1/models/m:predict

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local f = assert(io.open(os.getenv("TERN_WRK_BODY"), "rb"))
  wrk.method = "POST"
  wrk.body = f:read("*a")
  f:close()
  wrk.headers["Content-Type"] = "application/json"
  statuses = {}
  bodies = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  -- Bodies are small (a few classes per row); keep at most 64 distinct ones.
  if bodies[body] ~= nil then
    bodies[body] = bodies[body] + 1
  else
    local n = 0
    for _ in pairs(bodies) do n = n + 1 end
    if n < 64 then bodies[body] = 1 end
  end
end

function done(summary, latency, requests)
  local all_status, all_body = {}, {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do all_status[k] = (all_status[k] or 0) + v end
    for k, v in pairs(t:get("bodies")) do all_body[k] = (all_body[k] or 0) + v end
  end
  for k, v in pairs(all_status) do io.write(string.format("status %d %d\n", k, v)) end
  for k, v in pairs(all_body) do
    io.write(string.format("body %d %s\n", v, (k:gsub("%s+", " "))))
  end
  io.write(string.format("requests %d errors_connect %d errors_read %d errors_write %d errors_status %d errors_timeout %d\n",
    summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout))
  for _, p in ipairs({50, 90, 99}) do
    io.write(string.format("latency_p%d_us %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("latency_mean_us %.1f requests_per_s %.1f\n", latency.mean,
    summary.requests / (summary.duration / 1e6)))
end
