// Drives Debian's chromium with playwright-core for tests/console/test_console_browser.py.
//   node browser.js <scenario> '<json args>'
// Prints one JSON line of what the page showed; the Python test asserts on it. A page that never
// shows what a step waits for fails the scenario (exit 1) with the page's text.
"use strict";

const path = require("path");
const { chromium } = require(path.join(process.env.KW_PLAYWRIGHT_DIR, "node_modules", "playwright-core"));

const WAIT = 30000;

async function text(page, selector) {
  await page.waitForSelector(selector, {timeout: WAIT});
  return (await page.textContent(selector)).trim();
}

async function shot(page, args, name) {
  if (args.screenshots) await page.screenshot({path: path.join(args.screenshots, name)});
}

const scenarios = {
  // Overview, a topic's partitions and messages (JSON, then hex), a group's offsets.
  async pages(page, args) {
    const out = {};
    await page.goto(args.url + "/#/");
    const row = `tr[data-topic="${args.topic}"]`;
    await page.waitForSelector(row, {timeout: WAIT});
    out.overview_row = await page.$$eval(`${row} td`, tds => tds.map(td => td.textContent.trim()));
    out.brokers = await text(page, "#broker-count");
    await page.waitForFunction(() => document.querySelectorAll("svg.spark path").length > 0, null, {timeout: WAIT});
    await page.click(`${row} a`);
    await page.waitForSelector("#messages table", {timeout: WAIT});
    out.topic_title = await text(page, "#topic-name");
    out.partitions = await page.$$eval("tr[data-partition]", trs => trs.map(tr =>
      Array.from(tr.querySelectorAll("td"), td => td.textContent.trim())));
    out.configs = await page.$$eval("tr[data-config]", trs => Object.fromEntries(trs.map(tr => {
      const tds = tr.querySelectorAll("td");
      return [tds[0].textContent.trim(), [tds[1].textContent.trim(), tds[2].textContent.trim()]];
    })));
    const firstRow = () => page.$$eval("#messages tr[data-offset]", trs => trs.map(tr =>
      Array.from(tr.querySelectorAll("td"), td => td.textContent.trim())));
    out.messages_json = await firstRow();
    await shot(page, args, "console-topic.png");
    await page.selectOption("select[name=format]", "hex");
    out.messages_hex = await firstRow();
    // A page of two from offset 0, then "Read on".
    await page.selectOption("select[name=from]", "offset");
    await page.fill("input[name=position]", "0");
    await page.fill("input[name=limit]", "2");
    await page.click("#browse button[type=submit]");
    await page.waitForSelector("#read-on", {timeout: WAIT});
    await page.click("#read-on");
    await page.waitForSelector('#messages tr[data-offset="2"]', {timeout: WAIT});
    out.read_on = await page.$$eval("#messages tr[data-offset]", trs => trs.map(tr => tr.dataset.offset));
    await page.fill("input[name=limit]", "50");
    // Live tail: a message written now appears without reloading.
    await page.selectOption("select[name=format]", "utf8");
    await page.check("input[name=tail]");
    const produced = await page.evaluate(async topic => {
      const r = await fetch(`/api/topics/${encodeURIComponent(topic)}/messages`, {method: "POST",
        headers: {"Content-Type": "application/json", "X-Console": "1"},
        body: JSON.stringify({partition: 0, key: "tailed", value: "live"})});
      return r.json();
    }, args.topic);
    const tailedRow = `#messages tr[data-offset="${produced.offset}"]`;
    await page.waitForSelector(tailedRow, {timeout: WAIT});
    out.tailed = await page.$$eval(`${tailedRow} td`, tds => tds.map(td => td.textContent.trim()));
    await page.uncheck("input[name=tail]");
    await page.goto(args.url + `/#/groups/${encodeURIComponent(args.group)}`);
    await page.waitForSelector("tr[data-tp]", {timeout: WAIT});
    out.group_state = await text(page, "#group-state");
    out.group_offsets = await page.$$eval("tr[data-tp]", trs => trs.map(tr =>
      Array.from(tr.querySelectorAll("td"), td => td.textContent.trim())));
    await page.waitForFunction(() => Number(document.querySelector("#lag-chart path")?.dataset.points) > 3,
                               null, {timeout: WAIT});
    return out;
  },

  // A share group's page: its share-partitions table (start, end, in flight, lag).
  async share(page, args) {
    await page.goto(args.url + `/#/groups/${encodeURIComponent(args.group)}`);
    await page.waitForSelector("tr[data-tp] td.in-flight", {timeout: WAIT});
    await page.waitForFunction(() => document.querySelector("tr[data-tp] td.num")?.textContent.trim() === "2",
                               null, {timeout: WAIT});
    const out = {};
    out.group_state = await text(page, "#group-state");
    out.headings = await page.$$eval("h2", hs => hs.map(h => h.textContent.trim()));
    out.share_partitions = await page.$$eval("tr[data-tp]", trs => trs.map(tr =>
      Array.from(tr.querySelectorAll("td"), td => td.textContent.trim())));
    out.reset_form = await page.$$eval("#reset-offsets", forms => forms.length);
    await shot(page, args, "console-share-group.png");
    return out;
  },

  // The lag chart's total line, read as it is redrawn, until it has risen `rises` times.
  async lag(page, args) {
    await page.goto(args.url + `/#/groups/${encodeURIComponent(args.group)}`);
    const seen = [];
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
      const last = await page.evaluate(() => {
        const p = document.querySelector('#lag-chart path[data-series="total"]');
        return p ? {last: Number(p.dataset.last), points: Number(p.dataset.points)} : null;
      });
      if (last && (seen.length === 0 || last.last !== seen[seen.length - 1].last)) seen.push(last);
      if (seen.filter((s, i) => i > 0 && s.last > seen[i - 1].last).length >= args.rises) break;
      await page.waitForTimeout(100);
    }
    const lagTotal = await text(page, "#lag-total");
    await shot(page, args, "console-group.png");
    // The topic being written shows a rate above zero on the overview.
    await page.goto(args.url + "/#/");
    const rate = `tr[data-topic="${args.topic}"] td:nth-child(4)`;
    await page.waitForFunction(sel => /^[1-9]|^0\.[1-9]/.test(document.querySelector(sel)?.textContent || ""), rate,
                               {timeout: WAIT});
    await shot(page, args, "console-overview.png");
    return {seen, lag_total: lagTotal, rate: await text(page, rate)};
  },

  // Bad input: an unknown topic in the URL, an offset past the end, a malformed timestamp.
  async errors(page, args) {
    const out = {};
    await page.goto(args.url + "/#/topics/" + encodeURIComponent(args.missing));
    out.unknown_topic = await text(page, "#error");
    await page.goto(args.url + "/#/topics/" + encodeURIComponent(args.topic));
    await page.waitForSelector("#messages table", {timeout: WAIT});
    await page.selectOption("select[name=from]", "offset");
    await page.fill("input[name=position]", String(args.past_end));
    await page.click("#browse button[type=submit]");
    out.past_end = await text(page, "#messages #error");
    await page.selectOption("select[name=from]", "timestamp");
    await page.fill("input[name=position]", "yesterday-ish");
    await page.click("#browse button[type=submit]");
    await page.waitForFunction(() => /timestamp/i.test(document.querySelector("#messages #error")?.textContent || ""),
                               null, {timeout: WAIT});
    out.bad_timestamp = await text(page, "#messages #error");
    return out;
  },

  // A broker with SASL users: the login page, a wrong password, then what the user may see;
  // in read-only mode the page offers no writes and the API refuses one.
  async login(page, args) {
    const out = {};
    await page.goto(args.url + "/#/");
    await page.waitForSelector("#login", {timeout: WAIT});
    out.mode = await text(page, "#mode");
    await shot(page, args, "console-login.png");
    await page.fill("input[name=username]", args.user);
    await page.fill("input[name=password]", "wrong-" + args.password);
    await page.click("#login button[type=submit]");
    out.wrong_password = await text(page, "#login #error");
    await page.fill("input[name=password]", args.password);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#topic-count", {timeout: WAIT});
    out.who = await text(page, "#who");
    out.topics = await page.$$eval("tr[data-topic]", trs => trs.map(tr => tr.dataset.topic));
    out.create_form = (await page.$("#create-topic")) !== null;
    out.write = await page.evaluate(async () => {
      const r = await fetch("/api/topics", {method: "POST", headers: {"Content-Type": "application/json", "X-Console": "1"},
                                            body: JSON.stringify({name: "made-in-read-only", partitions: 1})});
      return {status: r.status, body: await r.json()};
    });
    await page.goto(args.url + "/#/topics/" + encodeURIComponent(args.forbidden));
    out.forbidden = await text(page, "#error");
    return out;
  },

  // The Schema Registry pages: subjects with their settings, a subject's versions and schema text,
  // an older version, soft-deleted subjects on demand.
  async schemas(page, args) {
    const out = {};
    const cells = sel => page.$$eval(sel, trs => trs.map(tr => Array.from(tr.querySelectorAll("td"), td => td.textContent.trim())));
    await page.goto(args.url + "/#/schemas");
    await page.waitForSelector(`tr[data-subject="${args.subject}"]`, {timeout: WAIT});
    out.nav = await text(page, "#nav-schemas");
    out.global = [await text(page, "#global-compatibility"), await text(page, "#global-mode")];
    out.subjects = await cells("#subjects tr[data-subject]");
    out.lines = (await page.innerText("main")).split("\n").map(l => l.trim());
    await shot(page, args, "console-schemas.png");
    await page.click(`tr[data-subject="${args.subject}"] a`);
    await page.waitForSelector("#versions", {timeout: WAIT});
    out.subject = [await text(page, "#subject-name"), await text(page, "#subject-compatibility"), await text(page, "#subject-mode")];
    out.versions = await cells("#versions tr[data-version]");
    out.latest_schema = await text(page, "#schema-text");
    await shot(page, args, "console-subject.png");
    await page.click('#versions tr[data-version="1"] a');
    await page.waitForFunction(() => /^Version 1 /.test(document.querySelector("main h2:nth-of-type(2)")?.textContent || ""),
                               null, {timeout: WAIT});
    out.first_schema = await text(page, "#schema-text");
    await page.goto(args.url + "/#/schemas");
    await page.waitForSelector("#show-deleted", {timeout: WAIT});
    out.deleted_hidden = (await page.$(`tr[data-subject="${args.deleted}"]`)) === null;
    await page.check("#show-deleted");
    await page.waitForSelector(`tr[data-subject="${args.deleted}"]`, {timeout: WAIT});
    out.deleted_row = (await cells(`tr[data-subject="${args.deleted}"]`))[0];
    return out;
  },

  // A topic whose values were written with registered schemas: decoded by default, hex on demand.
  async decoded(page, args) {
    const out = {};
    await page.goto(args.url + "/#/topics/" + encodeURIComponent(args.topic));
    await page.waitForSelector("#messages table", {timeout: WAIT});
    out.format = await page.$eval("select[name=format]", s => s.value);
    const cells = () => page.$$eval("#messages tr[data-offset]", trs => trs.map(tr =>
      Array.from(tr.querySelectorAll("td"), td => td.innerText.trim())));
    out.rows = await cells();
    out.decoded = await page.$$eval("#messages .decoded", ds => ds.map(d => d.dataset.schemaId));
    out.notes = await page.$$eval("#messages .schema-note", ns => ns.map(n => n.textContent.trim()));
    await shot(page, args, "console-decoded.png");
    await page.selectOption("select[name=format]", "hex");
    out.decoded_in_hex = await page.$$eval("#messages .decoded", ds => ds.length);
    out.rows_hex = await cells();
    return out;
  },
};

(async () => {
  const [name, argsJson] = process.argv.slice(2);
  const args = JSON.parse(argsJson || "{}");
  const browser = await chromium.launch({executablePath: process.env.KW_CHROMIUM, args: ["--no-sandbox"]});
  const page = await browser.newPage({viewport: {width: 1100, height: 760}});
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    const result = await scenarios[name](page, args);
    result.page_errors = errors;
    console.log(JSON.stringify(result));
  } catch (e) {
    let body = "";
    try { body = await page.innerText("body"); } catch (_) { /* the page is gone */ }
    console.error(`${name}: ${e.message}\n--- page text ---\n${body}\n--- page errors ---\n${errors.join("\n")}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
})();
