// System test: the npm client faktory-worker, unmodified, against the
// Faktory server at FAKTORY_URL (workq's -faktory-listen, started by
// tests/sys_faktory_node with -faktory-backoff-unit 10).  Checks Faktory's
// semantics: args survive the round trip, each job runs once, a failed job is
// retried with its failure, retry 0 is not, `at` is honoured, quiet/stop,
// INFO.  Exits 0 when all pass, 1 with "FAIL (<phase>): <why>" otherwise.
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
function ok(what) {
  console.log(`ok - ${what}`);
}
// What a value looks like after a JSON round trip (-0 becomes 0, ...).
const wire = (v) => JSON.parse(JSON.stringify(v));

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
  [0.1, -2.5, 3.141592653589793, 1e-7, 6.02e23, 1e300, -0, 2 ** 53 - 1, -(2 ** 31), 2 ** 64],
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
  let maxActive = 0;
  let slowRelease;
  const slow = new Promise((resolve) => (slowRelease = resolve));
  let slowDone = false;
  worker.register("Echo", (...args) => ({ job }) => void record(job, args));
  worker.register("Gate", (...args) => async ({ job }) => {
    record(job, args);
    maxActive = Math.max(maxActive, ++active);
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
    try {
      await job.push();
    } catch (e) {
      die(`PUSH of ${what} (${JSON.stringify(job.toJSON()).slice(0, 200)}) refused: ${e.message}`);
    }
  }

  phase = "push";
  const inTwo = Date.now() + 2000;
  const later = mk("Echo", ["scheduled"], "low", { at: new Date(inTwo) });
  await push(later, "a job at now + 2 s");
  const past = mk("Echo", ["in the past"], "critical", { at: new Date(Date.now() - 60000) });
  await push(past, "a job at now - 60 s");

  // 10 jobs that all wait for each other: the worker must hold 10 at once.
  const gates = Array.from({ length: 10 }, (_, i) => mk("Gate", [i], queues[i % 3]));
  for (const job of gates) await push(job, "a Gate job");

  const echoes = argCases.map((args, i) => mk("Echo", args, queues[i % 3]));
  echoes[0].custom = { trace: "t-1", nested: { n: [1, 2] } };
  echoes[0].priority = 9;
  for (const job of echoes.slice(0, 5)) await push(job, `args ${JSON.stringify(job.args).slice(0, 80)}`);
  const bulk = echoes.slice(5);
  const rejected = await client.pushBulk(bulk);
  assert.deepEqual(rejected, {}, "PUSHB rejected jobs");

  const flaky = mk("Flaky", ["once"], "default", { retry: 3 });
  await push(flaky, "the Flaky job");
  const doomed = mk("Doomed", ["never again"], "low", { retry: 0 });
  await push(doomed, "the Doomed job");

  await waitFor("10 Gate jobs at once", () => active === 10);
  gateOpen();
  ok("concurrency 10: 10 jobs held at once");

  await waitFor("the Echo jobs", () => echoes.every((j) => runsOf(j.jid) > 0));
  await waitFor("the Flaky job's retry", () => runsOf(flaky.jid) >= 2);
  await waitFor("the Doomed job", () => runsOf(doomed.jid) >= 1);
  await waitFor("the past job", () => runsOf(past.jid) >= 1);
  await waitFor("the scheduled job", () => runsOf(later.jid) >= 1);
  await waitFor("the Gate jobs", () => gates.every((j) => runsOf(j.jid) > 0));
  // Well past the longest retry backoff (44 s x 10 ms), then count again.
  phase = "quiet time";
  await sleep(1500);

  phase = "args";
  for (const job of [...echoes, ...gates, past, later]) {
    const list = runs.get(job.jid);
    assert.equal(list.length, 1, `job ${job.jid} ${JSON.stringify(job.args).slice(0, 80)} ran ${list.length} times`);
    const { args, job: got } = list[0];
    assert.deepStrictEqual(args, wire(job.args), `args of job ${job.jid}`);
    assert.equal(got.jid, job.jid);
    assert.equal(got.jobtype, job.jobtype);
    assert.equal(got.queue, job.queue, `queue of job ${job.jid}`);
  }
  assert.deepStrictEqual(runs.get(echoes[0].jid)[0].job.custom, echoes[0].custom, "custom");
  assert.equal(runs.get(echoes[0].jid)[0].job.priority, 9, "priority");
  ok(`${echoes.length + gates.length + 2} jobs ran once each, args, queue and custom intact`);

  phase = "scheduled";
  assert.ok(runs.get(later.jid)[0].at >= inTwo, `job at ${inTwo} ran at ${runs.get(later.jid)[0].at}`);
  ok("a job with `at` 2 s ahead did not run before `at`");

  phase = "retry";
  const [first, second] = runs.get(flaky.jid);
  assert.equal(runs.get(flaky.jid).length, 2, "Flaky ran more than twice");
  assert.equal(first.job.failure, undefined, "failure on the first attempt");
  const f = second.job.failure;
  assert.equal(typeof f, "object", `no failure on the retry: ${JSON.stringify(second.job)}`);
  assert.equal(f.retry_count, 0, `failure.retry_count: ${JSON.stringify(f)}`);
  assert.equal(f.message, "flaky: first attempt fails", "failure.message");
  assert.equal(f.errtype, "FlakyError", "failure.errtype");
  assert.equal(typeof f.failed_at, "string", "failure.failed_at");
  assert.equal(typeof f.next_at, "string", "failure.next_at");
  assert.ok(Array.isArray(f.backtrace) && f.backtrace.length > 0, "failure.backtrace");
  assert.deepStrictEqual(second.args, ["once"]);
  // Faktory's first backoff is at least 15 s, here 15 x 10 ms.
  assert.ok(second.at - first.at >= 150, `retried after ${second.at - first.at} ms`);
  ok(`failed job retried after ${second.at - first.at} ms with its failure`);
  assert.equal(runsOf(doomed.jid), 1, "a retry 0 job ran again");
  ok("failed job with retry 0 not run again");

  // quiet(): no new FETCH; the running Slow job goes on.  stop() waits for it.
  phase = "quiet";
  const slowJob = mk("Slow", ["slow"], "critical");
  await push(slowJob, "the Slow job");
  await waitFor("the Slow job", () => runsOf(slowJob.jid) === 1);
  worker.quiet();
  quieted = true;
  await waitFor("the FETCH in flight at quiet()", () => fetching === 0);
  const late = mk("Echo", ["after quiet"], "default");
  await push(late, "a job after quiet()");
  await sleep(1000);
  phase = "quiet";
  assert.equal(fetchesAfterQuiet, 0, "the worker fetched after quiet()");
  assert.equal(runsOf(late.jid), 0, "a job ran after quiet()");
  const info1 = await client.info();
  assert.equal(info1.faktory.total_enqueued, info0.faktory.total_enqueued + 1, "INFO total_enqueued with one job queued");
  ok("quiet(): no more fetching");

  phase = "stop";
  let stopped = false;
  const stopping = worker.stop().then(() => (stopped = true));
  await sleep(200);
  assert.equal(stopped, false, "stop() resolved while a job was running");
  slowRelease();
  await stopping;
  assert.ok(slowDone, "stop() resolved before the running job finished");
  ok("stop() waited for the running job, then resolved");

  // The job pushed after quiet() is still queued: fetch and ACK it here.
  phase = "fetch after stop";
  const probe = new Client({ url, wid: `probe-${process.pid}` });
  const got = await probe.fetch("critical", "default", "low");
  assert.ok(got, "FETCH returned nothing: the job pushed after quiet() is lost");
  assert.equal(got.jid, late.jid);
  assert.deepStrictEqual(got.args, ["after quiet"]);
  await probe.ack(got.jid);
  await probe.close();
  ok("the job left by the quiet worker is fetched and acknowledged by another");

  phase = "info";
  const info = await client.info();
  assert.equal(typeof info.faktory, "object", `INFO: ${JSON.stringify(info)}`);
  assert.equal(typeof info.server, "object", `INFO: ${JSON.stringify(info)}`);
  assert.equal(typeof info.server.faktory_version, "string", "server.faktory_version");
  for (const key of ["total_processed", "total_failures", "total_enqueued", "total_queues"])
    assert.equal(typeof info.faktory[key], "number", `faktory.${key}: ${JSON.stringify(info.faktory)}`);
  // ACK and FAIL both count as processed; FAILs are also failures.
  const acks = echoes.length + gates.length + 2 + 1 + 1 + 1; // + past, later, Flaky, Slow, late
  const fails = 2; // Flaky's first attempt, Doomed
  assert.equal(info.faktory.total_processed - info0.faktory.total_processed, acks + fails, "total_processed");
  assert.equal(info.faktory.total_failures - info0.faktory.total_failures, fails, "total_failures");
  assert.equal(info.faktory.total_enqueued, info0.faktory.total_enqueued, "total_enqueued at the end");
  ok(`INFO: faktory_version ${info.server.faktory_version}, total_processed +${acks + fails}`);
  await client.close();
}

main().then(
  () => {
    console.log("all passed");
    process.exit(0);
  },
  (e) => die((e && e.stack) || e),
);
