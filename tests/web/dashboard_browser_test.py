#!/usr/bin/env python3
"""The dashboard in a real browser: headless Chromium, driven through chromedriver's WebDriver
HTTP API, loads the pages from a running kernelwatch daemon with the Liger history imported, and
the test asserts on the rendered DOM. Any console error or failed request fails it.

Real parts only: the kernelwatch binary as a process, its SQLite file, Debian's chromium and
chromium-driver, a loopback webhook receiver that records the notification. Nothing is timed;
every wait polls a condition with a generous deadline.

Usage: dashboard_browser_test.py --kernelwatch BIN --data DIR [--screenshots DIR]
Exit 0 pass, 1 fail, 77 skip (chromium or chromedriver missing and
KERNELWATCH_REQUIRE_NEIGHBOURS unset; with it set a missing program is a failure).
"""
import argparse
import base64
import http.server as http_server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

TOKEN = "browser-test-token-7c2e"
LAYER_NORM_KEY = ("layer_norm/backward", "liger", "hidden16384-rows4096-fp32", "nvidia-h100-80gb-hbm3")
DEADLINE = 120.0  # seconds for any one wait: CI is a loaded 2-core machine


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def eventually(condition, what, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    value = condition()
    if not value:
        raise Failure("timed out waiting for " + what)
    return value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, headers=None, timeout=60):
    data = None if body is None else body.encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def find_program(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


class WebDriver:
    """The few WebDriver commands the test needs, over chromedriver's HTTP JSON API."""

    def __init__(self, chromedriver, chromium, workdir):
        self.port = free_port()
        self.log = open(os.path.join(workdir, "chromedriver.log"), "w")
        self.process = subprocess.Popen(
            [chromedriver, "--port=%d" % self.port, "--allowed-ips=127.0.0.1"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.base = "http://127.0.0.1:%d" % self.port
        eventually(self._ready, "chromedriver to answer /status")
        args = ["--headless=new", "--disable-gpu", "--user-data-dir=" + os.path.join(workdir, "profile"),
                "--window-size=1280,900", "--no-first-run", "--no-default-browser-check",
                "--disable-dev-shm-usage", "--hide-scrollbars"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
            "pageLoadStrategy": "normal",
        }}}
        value = self._call("POST", "/session", caps, timeout=180)
        self.session = value["sessionId"]

    def _ready(self):
        try:
            status, body, _ = http("GET", self.base + "/status", timeout=5)
            return status == 200 and json.loads(body)["value"].get("ready")
        except OSError:
            return False

    def _call(self, method, path, payload=None, timeout=120):
        body = None if payload is None else json.dumps(payload)
        status, text, _ = http(method, self.base + path, body,
                               {"Content-Type": "application/json"}, timeout=timeout)
        doc = json.loads(text) if text else {}
        if status != 200:
            raise Failure("WebDriver %s %s: %d %s" % (method, path, status, text[:500]))
        return doc.get("value")

    def cmd(self, method, path, payload=None):
        return self._call(method, "/session/%s%s" % (self.session, path), payload)

    def get(self, url):
        self.cmd("POST", "/url", {"url": url})
        eventually(lambda: self.js("return document.readyState") == "complete", "page load of " + url)

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def browser_log(self):
        return self.cmd("POST", "/se/log", {"type": "browser"}) or []

    def size(self, width, height):
        self.cmd("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path, width):
        # The whole page: the window as tall as the document (capped to keep files small).
        self.size(width, 900)
        height = self.js("return Math.min(document.documentElement.scrollHeight, 1150)")
        self.size(width, max(600, int(height)))
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.cmd("GET", "/screenshot")))
        self.size(1280, 900)

    def close(self):
        try:
            self._call("DELETE", "/session/" + self.session, timeout=60)
        except Exception:  # the process is killed below either way
            pass

    def kill(self):
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # chromedriver and its chromium
            except ProcessLookupError:
                pass
            self.process.wait()
        self.log.close()


class Receiver(http_server.BaseHTTPRequestHandler):
    """A loopback webhook destination: answers 200 and counts what arrived."""
    received = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        Receiver.received.append(self.rfile.read(length))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def with_digests(record):
    """The run's four required digests, as a client fills them: the environment's and protocol's
    kernelindex digests (SHA-256 of the RFC 8785 form; these documents hold only strings and
    integers, for which sorted compact JSON is that form), and digests of the labels for the
    workload and implementation, of which the record carries no document."""
    import hashlib as _h
    def canon(v):
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    def digest(doc):
        return "sha256:" + _h.sha256(canon({k: doc[k] for k in ("apiVersion", "kind", "spec")}).encode()).hexdigest()
    spec, labels = record["run"]["spec"], record["run"]["metadata"]["labels"]
    spec["environmentDigest"] = digest(record["environment"])
    spec["protocolDigest"] = digest(record["protocol"])
    spec["workloadDigest"] = "sha256:" + _h.sha256(canon({"workload": labels["workload"]}).encode()).hexdigest()
    spec["implementationDigest"] = "sha256:" + _h.sha256(canon({"provider": labels["provider"]}).encode()).hexdigest()
    return record


def record(index, median_ns, start):
    observed = start + timedelta(minutes=index)
    at = observed.strftime("%Y-%m-%dT%H:%M:%SZ")
    hardware = {"vendor": "nvidia", "product": "NVIDIA H100", "formFactor": "80GB HBM3",
                "architecture": "sm_90"}
    return with_digests({"run": {
        "apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun",
        "spec": {
            "status": "passed",
            "timing": {"latencyNs": {"median": median_ns}, "primaryStatistic": "median"},
            "observedAt": at,
            "measurements": [
                {"metric": "latency", "statistic": "p20", "unit": "ns", "value": median_ns - median_ns // 2000},
                {"metric": "latency", "statistic": "p80", "unit": "ns", "value": median_ns + median_ns // 2000}],
            "sourceNative": {"source": "browser-test", "benchmark": "synthetic/forward",
                             "externalId": "synthetic/forward/posted/browser-%d" % index},
        },
        "metadata": {"name": "browser-%d" % index, "labels": {"provider": "posted", "workload": "synthetic-browser"}}},
        "protocol": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkProtocol",
                     "spec": {"harness": {"name": "browser-test"}, "measurement": {"timer": "cuda_events", "primaryStatistic": "median"}},
                     "metadata": {"name": "browser-test-protocol"}},
        "environment": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "ExecutionEnvironment", "metadata": {"name": "test-nvidia-h100"},
                        "spec": {"hardware": hardware, "software": {}}}})


class Test:
    def __init__(self, args, workdir):
        self.args = args
        self.dir = workdir
        self.daemon = None
        self.driver = None
        self.receiver = None
        self.base = None

    # ---- setup ----

    def kw(self, *argv):
        result = subprocess.run([self.args.kernelwatch, *argv], capture_output=True, text=True, timeout=600)
        check(result.returncode == 0, "kernelwatch %s: %s %s" % (argv[0], result.stdout, result.stderr))
        return result.stdout

    def start(self):
        db = os.path.join(self.dir, "kw.db")
        liger = os.path.join(self.args.data, "liger")
        self.kw("import", "--db", db, os.path.join(liger, "all_benchmark_data.tvd_layer_norm.csv"),
                os.path.join(liger, "weekly_ci.tvd_layer_norm.csv"))
        # Markup imported from a CSV like any other row: the importer turns labels into
        # [a-z0-9._-], so the version column is what reaches a page raw. Shown as text.
        with open(os.path.join(liger, "all_benchmark_data.tvd_layer_norm.csv"), newline="") as f:
            header = f.readline()
            row = next(line for line in f if line.startswith("layer_norm,liger,backward"))
        hostile = re.sub(r",[0-9.]+\r?\n?$", ",0.9.9<script>alert(1)</script>\n", row)
        hostile = re.sub(r"20[0-9-]+ [0-9:]+", "2026-06-01 00:00:00", hostile)
        hostile = hostile.replace('torch.float32""', 'torch.float32"", ""<script>x"": ""<i>y""')
        check(hostile != row, "the hostile row differs")
        with open(os.path.join(self.dir, "hostile.csv"), "w") as f:
            f.write(header + hostile)
        self.kw("import", "--db", db, os.path.join(self.dir, "hostile.csv"))

        self.receiver = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=self.receiver.serve_forever, daemon=True).start()
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        hook = os.path.join(self.dir, "hook-url")
        with open(hook, "w") as f:
            f.write("http://127.0.0.1:%d/hook\n" % self.receiver.server_address[1])
        os.chmod(hook, 0o600)
        config = {
            "storage": {"path": db},
            "http": {"listen": "127.0.0.1:0", "token_file": token},
            "backend": "cpu",
            "benchmarks": [],
            "notifiers": [{"type": "webhook", "name": "hook",
                           "url_file": hook, "timeout": "5s"}],
        }
        with open(os.path.join(self.dir, "kernelwatch.json"), "w") as f:
            json.dump(config, f)
        self.daemon_log = os.path.join(self.dir, "daemon.log")
        with open(self.daemon_log, "w") as log:
            self.daemon = subprocess.Popen(
                [self.args.kernelwatch, "daemon", "--config", os.path.join(self.dir, "kernelwatch.json")],
                stdout=log, stderr=subprocess.STDOUT)

        def port():
            with open(self.daemon_log) as f:
                m = re.search(r"listening on 127\.0\.0\.1:([0-9]+)", f.read())
            check(self.daemon.poll() is None, "the daemon exited: " + open(self.daemon_log).read())
            return m and int(m.group(1))
        self.base = "http://127.0.0.1:%d" % eventually(port, "the daemon to listen")
        eventually(lambda: http("GET", self.base + "/readyz")[0] == 200, "the daemon to be ready")

        # A stored alert the daemon raises and notifies: ten steady runs, then one 30% slower,
        # dated relative to now (never to a calendar date).
        start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
        batch = [record(i, 1_000_000 + (i % 3) * 5_000, start) for i in range(10)]
        status, body, _ = http("POST", self.base + "/api/v1/runs", json.dumps(batch),
                               {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        check(status == 200, "posting runs: %d %s" % (status, body))
        status, body, _ = http("POST", self.base + "/api/v1/runs", json.dumps(record(10, 1_300_000, start)),
                               {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        check(status == 200 and json.loads(body)["runs"][0]["fired"], "the step fires: " + body)
        self.alert_id = json.loads(body)["runs"][0]["fired"][0]
        eventually(lambda: Receiver.received, "the webhook notification")

        self.driver = WebDriver(find_program("chromedriver"), self.chromium, self.dir)

    def stop(self):
        if self.driver:
            self.driver.close()
            self.driver.kill()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(60)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        if self.receiver:
            self.receiver.shutdown()

    # ---- helpers ----

    def visit(self, path):
        self.driver.get(self.base + path)
        self.assert_clean_log(path)

    def assert_clean_log(self, where):
        bad = [e for e in self.driver.browser_log()
               if e.get("level") in ("SEVERE", "WARNING") or "Failed to load resource" in e.get("message", "")]
        check(not bad, "browser log at %s: %s" % (where, json.dumps(bad)))

    def key_digest(self, labels):
        keys = json.loads(http("GET", self.base + "/api/v1/keys")[1])
        for k in keys:
            if (k["benchmark"], k["provider"], k["workload"], k["environment"]) == labels:
                return k, k["digest"]
        raise Failure("no key %s in /api/v1/keys" % (labels,))

    # ---- the checks ----

    def overview(self):
        self.visit("/")
        d = self.driver
        keys = json.loads(http("GET", self.base + "/api/v1/keys")[1])
        rows = d.js("return document.querySelectorAll('#keys tr.key').length")
        pages = d.js("var n = document.querySelector('nav.pages'); return n ? n.textContent : ''")
        check(rows == min(len(keys), 100), "overview lists %s rows for %d keys (%s)" % (rows, len(keys), pages))
        check(d.js("return document.querySelector('.status') !== null"), "the daemon status is shown")
        check("hook" in d.js("return document.querySelector('.status').textContent"), "outbox destination shown")
        firing = d.js("return Array.from(document.querySelectorAll('#open tr.key')).map(function(r){return r.textContent})")
        check(any("synthetic" in t or "posted" in t or "browser" in t or "firing" in t for t in firing),
              "the firing key is listed first: %s" % firing)
        # The hostile label is text, never markup.
        check(d.js("return document.querySelectorAll('script:not([src])').length") == 0, "no inline script")
        # Filter by environment through the form (the page reloads with the query).
        d.js("var s = document.querySelector('select[name=environment]');"
             "s.value = 'nvidia-h100-80gb-hbm3'; s.dispatchEvent(new Event('change'));")
        eventually(lambda: "environment=nvidia-h100-80gb-hbm3" in d.js("return location.search")
                   and d.js("return document.readyState") == "complete", "the filtered overview")
        self.assert_clean_log("/ filtered")
        envs = d.js("return Array.from(document.querySelectorAll('#keys h3.env')).map(function(h){return h.textContent})")
        check(envs == ["nvidia-h100-80gb-hbm3"], "filtered to one environment: %s" % envs)
        d.js("var s = document.querySelector('select[name=state]'); s.value = 'firing';"
             "s.dispatchEvent(new Event('change'));")
        eventually(lambda: "state=firing" in d.js("return location.search")
                   and d.js("return document.readyState") == "complete", "the state filter")
        states = d.js("return Array.from(document.querySelectorAll('#keys tr.key')).map(function(r){return r.dataset.state})")
        check(states and all(s == "firing" for s in states), "only firing keys: %s" % states)

    def key_page(self):
        _, digest = self.key_digest(LAYER_NORM_KEY)
        ref = digest.split(":")[1]
        self.layer_norm_ref = ref
        self.visit("/keys/" + ref)
        d = self.driver
        points = d.js("return document.querySelectorAll('svg.chart .pt').length")
        check(points == 30, "the chart shows 30 runs, not %s" % points)
        check(d.js("return document.querySelectorAll('table.runs tbody tr').length") == 30, "30 table rows")
        band = d.js("var b = document.querySelector('svg.chart path.band');"
                    "return b ? b.getBBox().width * b.getBBox().height : 0")
        check(band > 100, "a band is drawn (area %s)" % band)
        # A mark's label (its <text>; the <title> holds the explanation, which may quote other changes).
        marks = d.js("return Array.from(document.querySelectorAll('svg.chart .alert-mark')).map(function(a){"
                     "return a.querySelector('text').textContent})")
        check(any("-80" in m and "\u25bc" in m for m in marks), "the 0.6.1 step (-80%%) is marked: %s" % marks)
        fired = d.js("var m = Array.from(document.querySelectorAll('svg.chart .alert-mark')).find(function(a){"
                     "return a.querySelector('text').textContent.indexOf('-80') >= 0}); var id = m.getAttribute('data-fired');"
                     "var row = Array.from(document.querySelectorAll('table.runs tbody tr')).find(function(r){"
                     "return r.querySelector('td.id').getAttribute('data-id') === id}); return row ? row.textContent : ''")
        check("0.6.1" in fired, "the -80%% step fires at the 0.6.1 run: %r" % fired)
        check(d.js("return document.querySelectorAll('svg.chart .segment').length") >= 1, "segments are drawn")
        # Each point tells its run on focus.
        tip = d.js("var p = document.querySelector('svg.chart .pt'); p.focus();"
                   "var t = document.getElementById('tip'); return t.hidden ? '' : t.textContent")
        check("median" in tip and "p20" in tip and "version" in tip, "the focused point's tooltip: %r" % tip)
        # The log scale.
        self.visit("/keys/%s?scale=log" % ref)
        check("log scale" in d.js("return document.querySelector('svg.chart').textContent"), "log scale drawn")
        # The -80% alert's page (history imported: found by the replay).
        href = d.js("return Array.from(document.querySelectorAll('svg.chart .alert-mark')).find(function(a){"
                    "return a.querySelector('text').textContent.indexOf('-80') >= 0}).getAttribute('href')")
        self.visit(href)
        # The step was one of the 0.6.1 run's incident: the mark links to the incident, which lists
        # it with its own change.
        check("-80" in d.js("return document.body.textContent"), "the alert page shows the -80% step")

    def alert_page(self):
        self.visit("/alerts/" + urllib.parse.quote(self.alert_id, safe=""))
        d = self.driver
        check(d.js("return document.querySelector('.alert-band').textContent").startswith("["), "the band is shown")
        check(d.js("return document.querySelectorAll('svg.chart path.band').length") >= 1, "the band is drawn")
        rows = d.js("return Array.from(document.querySelectorAll('table.notifications tbody tr')).map(function(r){return r.textContent})")
        check(rows and "hook" in rows[0], "the notification is listed: %s" % rows)
        eventually(lambda: (self.driver.get(self.driver.js("return location.href")) or True) and
                   "delivered" in " ".join(d.js("return Array.from(document.querySelectorAll('table.notifications tbody tr')).map(function(r){return r.textContent})")),
                   "the notification shown delivered")
        check(d.js("return document.getElementById('ack-form') !== null"), "the ack form is there")
        # A wrong token is refused and nothing changes; the right one acknowledges.
        d.js("document.getElementById('ack-token').value = 'wrong';"
             "document.querySelector('#ack-form button[value=acknowledge]').click();")
        eventually(lambda: "refused" in d.js("return document.getElementById('ack-result').textContent"), "the refusal")
        check(d.js("return document.getElementById('ack-token').value") == "", "the token is not kept in the page")
        # The refused fetch shows in the log as a failed resource (401): read it, expect only that.
        entries = d.browser_log()
        check(all("401" in e.get("message", "") for e in entries if e.get("level") == "SEVERE"), "only the 401: %s" % entries)
        d.js("document.getElementById('ack-token').value = arguments[0];"
             "document.querySelector('#ack-form button[value=acknowledge]').click();", TOKEN)

        def acknowledged():
            alerts = json.loads(http("GET", self.base + "/api/v1/alerts")[1])
            return any(a["id"] == self.alert_id and a["state"] == "acknowledged" for a in alerts)
        eventually(acknowledged, "the API to show the alert acknowledged")
        eventually(lambda: d.js("return document.readyState") == "complete" and
                   "acknowledged" in d.js("return document.querySelector('h1').textContent"), "the page reloaded")
        self.assert_clean_log("alert page after ack")
        check(TOKEN not in d.js("return document.documentElement.outerHTML"), "the token is nowhere in the page")

    def bad_input(self):
        status, body, headers = http("GET", self.base + "/keys/" + "0" * 64)
        check(status == 404 and "text/html" in headers.get("Content-Type", ""), "unknown key: %d" % status)
        status, body, _ = http("GET", self.base + "/keys/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        check(status == 404 and "<script>alert" not in body and "&lt;script&gt;" in body, "404 escapes the reference")
        status, _, _ = http("GET", self.base + "/alerts/no-such-alert")
        check(status == 404, "unknown alert: %d" % status)
        for path in ("/?page=abc", "/?state=bogus", "/?nonsense=1", "/keys/%s?scale=cubic" % self.layer_norm_ref,
                     "/keys/%s?from=yesterday" % self.layer_norm_ref, "/keys/%s?last=-1" % self.layer_norm_ref):
            status, body, _ = http("GET", self.base + path)
            check(status == 400 and "Bad request" in body, "%s: %d" % (path, status))
        # The hostile version: escaped in the HTML, shown as text in the DOM.
        keys = json.loads(http("GET", self.base + "/api/v1/keys")[1])
        hostile = [k for k in keys if "2026-06-01" in json.dumps(k)]
        check(len(hostile) == 1, "one key holds the hostile run: %s" % hostile)
        ref = hostile[0]["digest"].split(":")[1]
        status, body, _ = http("GET", self.base + "/keys/" + ref)
        check(status == 200 and "<script>alert(1)" not in body and "&lt;script&gt;alert(1)" in body,
              "the <script> version is escaped")
        self.visit("/keys/" + ref)
        check(self.driver.js("return document.body.innerText.indexOf('0.9.9<script>alert(1)</script>') >= 0"),
              "the version reads as text")
        check(self.driver.js("return document.querySelectorAll('script').length") == 1, "only the page's own script")

    def screenshots(self, out):
        os.makedirs(out, exist_ok=True)
        d = self.driver
        self.visit("/")
        d.screenshot(os.path.join(out, "overview.png"), 1280)
        self.visit("/keys/" + self.layer_norm_ref)
        d.screenshot(os.path.join(out, "key.png"), 1280)
        d.screenshot(os.path.join(out, "key-phone.png"), 390)
        self.visit("/alerts/" + urllib.parse.quote(self.alert_id, safe=""))
        d.screenshot(os.path.join(out, "alert.png"), 1280)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelwatch", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--screenshots", help="also save PNG screenshots into this folder")
    args = parser.parse_args()
    chromium = find_program("chromium", "chromium-browser")
    chromedriver = find_program("chromedriver")
    if not chromium or not chromedriver:
        missing = "chromium" if not chromium else "chromedriver"
        message = "%s is not installed (Debian packages chromium, chromium-driver); scripts/setup installs it" % missing
        if os.environ.get("KERNELWATCH_REQUIRE_NEIGHBOURS") == "1":
            print("FAIL: " + message)
            return 1
        print("SKIP: " + message)
        return 77
    workdir = tempfile.mkdtemp(prefix="kw-browser-")
    test = Test(args, workdir)
    test.chromium = chromium
    try:
        test.start()
        for name in ("overview", "key_page", "alert_page", "bad_input"):
            getattr(test, name)()
            print("ok", name, flush=True)
        if args.screenshots:
            test.screenshots(args.screenshots)
        return 0
    except Exception as e:  # noqa: BLE001 - every failure is reported with the daemon's log
        traceback.print_exc()
        print("FAIL:", e)
        try:
            print("--- daemon log ---\n" + open(os.path.join(workdir, "daemon.log")).read()[-4000:])
        except OSError:
            pass
        return 1
    finally:
        test.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    import urllib.parse  # noqa: E402 (used by the checks)
    sys.exit(main())
