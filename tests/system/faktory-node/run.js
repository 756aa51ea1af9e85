// System test: the npm client faktory-worker, unmodified, against the
// Faktory server at FAKTORY_URL (workq's -faktory-listen, started by
// tests/system/sys_faktory_node with -faktory-backoff-unit 10).  Checks Faktory's
// semantics: args survive the round trip, each job runs once, a failed job is
// retried with its failure, retry 0 is not, `at` is honoured, quiet/stop,
// INFO.  Prints "ok - ..." / "not ok - ..." per group of checks; exits 0 when
// all pass, 1 otherwise ("FAIL (<phase>): <why>" when it cannot go on).
"use strict";
const assert = require("node:assert/strict");
const { Client, Worker } = require("faktory-worker");

const url = process.env.FAKTORY_URL;
const timeoutSec = Number(process.env.FAKTORY_TEST_TIMEOUT || 60);
const queues = ["critical", "default", "low"];
let phase = "start";

function die(why) {
  console.error(`FAIL (${phase}): ${why}`);
  process.exit(1);
}
if (!url) die("FAKTORY_URL is not set");
setTimeout(() => die(`not done after ${timeoutSec} s`), timeoutSec * 1000);
process.on("unhandledRejection", (e) => die((e && e.stack) || e));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(what, cond) {
  phase = `waiting for ${what}`;
  while (!cond()) await sleep(20);
}
// A group of checks: a failed one is reported, and the run goes on.
const failures = [];
function notOk(what, why) {
  failures.push(what);
  console.log(`not ok - ${what}: ${why}`);
}
async function checks(what, fn) {
  phase = what;
  try {
    const detail = await fn();
    console.log(`ok - ${what}${detail ? ` (${detail})` : ""}`);
  } catch (e) {
    if (!(e instanceof assert.AssertionError)) throw e;
    notOk(what, e.message);
  }
}
// What a value looks like after a JSON round trip (-0 becomes 0, ...).
const wire = (v) => JSON.parse(JSON.stringify(v));
const show = (v) => JSON.stringify(v).slice(0, 80);

// Every run of every job: jid -> [{ args, job, at }].
const runs = new Map();
function record(job, args) {
  const list = runs.get(job.jid) || [];
  list.push({ args, job, at: Date.now() });
  runs.set(job.jid, list);
  return list.length;
}
const runsOf = (jid) => (runs.get(jid) || []).length;

// Arguments that must come back exactly as pushed.
const big = Array.from({ length: 16384 }, (_, i) => "abcdefghijklmnopqrstuvwxyz"[i % 26]).join("");
const argCases = [
  ["ünïcødé ✓ 日本", "astral 🎉𝄞", "Ω≈ç√∫"],
  [big],
  ["日本".repeat(2731)], // 16 KiB of UTF-8
  [null, [null], { n: null }],
  [0.1, -2.5, 3.141592653589793, 1e-7, 6.02e23, 1e300, -0, 2 ** 53 - 1, -(2 ** 31)],
  [2 ** 64, -(2 ** 70), 1e20], // integers beyond 64 bits: JSON.stringify writes all digits
  [{ a: { b: [1, [2, [3, { c: "é", d: [] }]]] }, empty: {}, list: [] }, [[], {}]],
  [true, false, [true, false], { t: true, f: false }],
  [],
  ['quote " backslash \\ slash / tab \t newline \n cr \r control \u0001 \u001f'],
  ["nul \u0000 inside"],
];

async function main() {
  const client = new Client({ url });
  const info0 = await client.info();

  const worker = new Worker({ url, queues, concurrency: 10, beatInterval: 1 });
  worker.on("error", (e) => die(`worker error: ${(e && e.stack) || e}`));
  worker.on("fail", ({ job, error }) => {
    if (job.jobtype !== "Flaky" && job.jobtype !== "Doomed")
      die(`${job.jobtype} job ${job.jid} failed: ${error.message}`);
  });
  // Count FETCHes in flight, and those begun after quiet().
  let fetching = 0;
  let fetchesAfterQuiet = 0;
  let quieted = false;
  const fetch = worker.fetch.bind(worker);
  worker.fetch = async () => {
    if (quieted) fetchesAfterQuiet++;
    fetching++;
    try {
      return await fetch();
    } finally {
      fetching--;
    }
  };

  let gateOpen;
  const gate = new Promise((resolve) => (gateOpen = resolve));
  let active = 0;
  let slowRelease;
  const slow = new Promise((resolve) => (slowRelease = resolve));
  let slowDone = false;
  worker.register("Echo", (...args) => ({ job }) => void record(job, args));
  worker.register("Gate", (...args) => async ({ job }) => {
    record(job, args);
    active++;
    await gate;
    active--;
  });
  worker.register("Flaky", (...args) => ({ job }) => {
    if (record(job, args) === 1)
      throw Object.assign(new Error("flaky: first attempt fails"), { code: "FlakyError" });
  });
  worker.register("Doomed", (...args) => ({ job }) => {
    record(job, args);
    throw Object.assign(new Error("doomed"), { code: "DoomedError" });
  });
  worker.register("Slow", (...args) => async ({ job }) => {
    record(job, args);
    await slow;
    slowDone = true;
  });
  phase = "worker start";
  await worker.work();

  // Jobs built with the client; push() sends PUSH, pushBulk() PUSHB.
  const mk = (type, args, queue, opts = {}) => {
    const job = client.job(type, ...args);
    job.queue = queue;
    return Object.assign(job, opts);
  };
  async function push(job, what) {
    phase = `PUSH of ${what}`;
    await job.push();
  }

  const inTwo = Date.now() + 2000;
  const later = mk("Echo", ["scheduled"], "low", { at: new Date(inTwo) });
  await push(later, "a job at now + 2 s");
  const past = mk("Echo", ["in the past"], "critical", { at: new Date(Date.now() - 60000) });
  await push(past, "a job at now - 60 s");

  // 10 jobs that all wait for each other: the worker must hold 10 at once.
  const gates = Array.from({ length: 10 }, (_, i) => mk("Gate", [i], queues[i % 3]));
  for (const job of gates) await push(job, "a Gate job");

  // The arg cases, half by PUSH, half by PUSHB; a refused one is a failure.
  let echoes = argCases.map((args, i) => mk("Echo", args, queues[i % 3]));
  const custom = echoes[0];
  custom.custom = { trace: "t-1", nested: { n: [1, 2] } };
  custom.priority = 9;
  const refused = new Set();
  const half = Math.ceil(echoes.length / 2);
  for (const job of echoes.slice(0, half)) {
    await push(job, `args ${show(job.args)}`).catch((e) => {
      refused.add(job);
      notOk(`PUSH of args ${show(job.args)}`, `refused: ${e.message}`);
    });
  }
  phase = "PUSHB";
  const rejected = await client.pushBulk(echoes.slice(half));
  for (const job of echoes.slice(half)) {
    if (!(job.jid in rejected)) continue;
    refused.add(job);
    notOk(`PUSHB of args ${show(job.args)}`, `refused: ${rejected[job.jid].reason}`);
  }
  echoes = echoes.filter((job) => !refused.has(job));

  const flaky = mk("Flaky", ["once"], "default", { retry: 3 });
  await push(flaky, "the Flaky job");
  const doomed = mk("Doomed", ["never again"], "low", { retry: 0 });
  await push(doomed, "the Doomed job");

  await waitFor("10 Gate jobs at once", () => active === 10);
  gateOpen();
  console.log("ok - concurrency 10: 10 jobs held at once");

  await waitFor("the Echo jobs", () => echoes.every((j) => runsOf(j.jid) > 0));
  await waitFor("the Flaky job's retry", () => runsOf(flaky.jid) >= 2);
  await waitFor("the Doomed job", () => runsOf(doomed.jid) >= 1);
  await waitFor("the past job", () => runsOf(past.jid) >= 1);
  await waitFor("the scheduled job", () => runsOf(later.jid) >= 1);
  await waitFor("the Gate jobs", () => gates.every((j) => runsOf(j.jid) > 0));
  // Well past the longest first backoff (44 s x 10 ms), then count again.
  phase = "quiet time";
  await sleep(1500);

  const all = [...echoes, ...gates, past, later];
  await checks(`${all.length} jobs ran once each, args, queue and custom intact`, () => {
    for (const job of all) {
      const list = runs.get(job.jid);
      assert.equal(list.length, 1, `job ${job.jid} ${show(job.args)} ran ${list.length} times`);
      const { args, job: got } = list[0];
      assert.deepStrictEqual(args, wire(job.args), `args of job ${job.jid}`);
      assert.equal(got.jid, job.jid);
      assert.equal(got.jobtype, job.jobtype);
      assert.equal(got.queue, job.queue, `queue of job ${job.jid}`);
    }
    if (refused.has(custom)) return;
    const { job } = runs.get(custom.jid)[0];
    assert.deepStrictEqual(job.custom, custom.custom, "custom");
    assert.equal(job.priority, 9, "priority");
  });

  // Not before `at`, give or take how our clock and the server's may differ
  // (a millisecond, in practice); never mind how late.
  await checks("a job with `at` 2 s ahead did not run before `at`", () => {
    const at = runs.get(later.jid)[0].at;
    assert.ok(at >= inTwo - 20, `job at ${inTwo} ran at ${at}, ${inTwo - at} ms early`);
  });

  await checks("a failed job is retried, with its failure", () => {
    const list = runs.get(flaky.jid);
    assert.equal(list.length, 2, `Flaky ran ${list.length} times`);
    const [first, second] = list;
    assert.equal(first.job.failure, undefined, "failure on the first attempt");
    const f = second.job.failure;
    assert.equal(typeof f, "object", `no failure on the retry: ${JSON.stringify(second.job)}`);
    assert.equal(f.retry_count, 0, `failure.retry_count: ${JSON.stringify(f)}`);
    assert.equal(f.message, "flaky: first attempt fails", "failure.message");
    assert.equal(f.errtype, "FlakyError", "failure.errtype");
    assert.equal(typeof f.failed_at, "string", "failure.failed_at");
    assert.equal(typeof f.next_at, "string", "failure.next_at");
    // The job's `backtrace` (lines to keep) is 0 by default: none, or an array.
    assert.ok(f.backtrace === undefined || Array.isArray(f.backtrace), "failure.backtrace");
    assert.deepStrictEqual(second.args, ["once"]);
    // Faktory's first backoff is at least 15 s, here 15 x 10 ms.
    assert.ok(second.at - first.at >= 150, `retried after ${second.at - first.at} ms`);
    return `after ${second.at - first.at} ms`;
  });

  await checks("a failed job with retry 0 is not run again", () => {
    assert.equal(runsOf(doomed.jid), 1, `it ran ${runsOf(doomed.jid)} times`);
  });

  // quiet(): no new FETCH; the running Slow job goes on.  stop() waits for it.
  const slowJob = mk("Slow", ["slow"], "critical");
  await push(slowJob, "the Slow job");
  await waitFor("the Slow job", () => runsOf(slowJob.jid) === 1);
  worker.quiet();
  quieted = true;
  await waitFor("the FETCH in flight at quiet()", () => fetching === 0);
  const late = mk("Echo", ["after quiet"], "default");
  await push(late, "a job after quiet()");
  await sleep(1000);
  await checks("quiet(): no more fetching", async () => {
    assert.equal(fetchesAfterQuiet, 0, "the worker fetched after quiet()");
    assert.equal(runsOf(late.jid), 0, "a job ran after quiet()");
    const { faktory } = await client.info();
    assert.equal(faktory.total_enqueued, info0.faktory.total_enqueued + 1, "INFO total_enqueued");
  });

  phase = "stop";
  let stopped = false;
  const stopping = worker.stop().then(() => (stopped = true));
  await sleep(200);
  const stoppedEarly = stopped;
  slowRelease();
  await stopping;
  await checks("stop() waited for the running job, then resolved", () => {
    assert.equal(stoppedEarly, false, "stop() resolved while a job was running");
    assert.ok(slowDone, "stop() resolved before the running job finished");
  });

  // The job pushed after quiet() is still queued: fetch and ACK it here.
  phase = "fetch after stop";
  const probe = new Client({ url, wid: `probe-${process.pid}` });
  const got = await probe.fetch("critical", "default", "low");
  await checks("the quiet worker's job is left for another to fetch", () => {
    assert.ok(got, "FETCH returned nothing: the job pushed after quiet() is lost");
    assert.equal(got.jid, late.jid);
    assert.deepStrictEqual(got.args, ["after quiet"]);
  });
  if (got) await probe.ack(got.jid);
  await probe.close();

  phase = "INFO";
  const info = await client.info();
  // ACK and FAIL both count as processed (as Faktory's server counts them);
  // FAILs also as failures.  Refused args cases were never processed.
  const acks = echoes.length + gates.length + 2 + 1 + 1 + (got ? 1 : 0); // past, later, Flaky, Slow, late
  const fails = 2; // Flaky's first attempt, Doomed
  await checks("INFO", () => {
    assert.equal(typeof info.faktory, "object", `INFO: ${JSON.stringify(info)}`);
    assert.equal(typeof info.server, "object", `INFO: ${JSON.stringify(info)}`);
    assert.equal(typeof info.server.faktory_version, "string", "server.faktory_version");
    for (const key of ["total_processed", "total_failures", "total_enqueued", "total_queues"])
      assert.equal(typeof info.faktory[key], "number", `faktory.${key}: ${JSON.stringify(info.faktory)}`);
    const processed = info.faktory.total_processed - info0.faktory.total_processed;
    const failed = info.faktory.total_failures - info0.faktory.total_failures;
    assert.equal(failed, fails, `total_failures went up by ${failed}, not by ${fails} FAILs`);
    assert.equal(processed, acks + fails,
      `total_processed went up by ${processed}, not by ${acks} ACKs + ${fails} FAILs`);
    assert.equal(info.faktory.total_enqueued, info0.faktory.total_enqueued, "total_enqueued at the end");
    return `faktory_version ${info.server.faktory_version}`;
  });
  await client.close();
}

main().then(
  () => {
    if (failures.length) die(`${failures.length} failed: ${failures.join("; ")}`);
    console.log("all passed");
    process.exit(0);
  },
  (e) => die((e && e.stack) || e),
);
