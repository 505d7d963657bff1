// The dashboard's stylesheet and script, compiled into the binary: the daemon serves them under
// /assets/ and the static report writes them beside its pages. Nothing comes from the internet.
#include "web/pages.hpp"

namespace kernelwatch::web {

std::string_view stylesheet() {
  static constexpr std::string_view kCss = R"css(
:root{--fg:#1b1f24;--muted:#5b6470;--line:#d0d7de;--bg:#fff;--band:#9ecbff;--reg:#b3261e;--imp:#1a7f37;--accent:#0550ae}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{display:flex;gap:1em;align-items:baseline;padding:.6em 1em;border-bottom:1px solid var(--line);background:#f6f8fa}
.brand{font-weight:700;font-size:1.15em;color:var(--fg);text-decoration:none}
.sub{color:var(--muted);font-weight:400}
.nav{margin-left:auto}
main{max-width:1240px;margin:0 auto;padding:0 1em 2em}
footer{color:var(--muted);text-align:center;padding:1em;font-size:.85em}
h1{font-size:1.45em;margin:.6em 0 .3em}h2{font-size:1.15em;margin:1.2em 0 .4em}
h3.env{margin:1em 0 .2em;font-size:1.05em}h4.bench{margin:.6em 0 .2em;font-size:.95em;color:var(--muted)}
a{color:var(--accent)}
.muted{color:var(--muted)}.id{font-family:ui-monospace,monospace;font-size:.85em;word-break:break-all}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:.2em 0 .6em}
th,td{border-bottom:1px solid var(--line);padding:.3em .5em;text-align:left;vertical-align:top}
th{font-weight:600;background:#f6f8fa;white-space:nowrap}
td.id{white-space:nowrap}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.wl{color:var(--muted)}
.badge{display:inline-block;padding:0 .45em;border-radius:.8em;border:1px solid var(--line);white-space:nowrap;font-size:.9em}
.st-firing,.as-firing{border-color:var(--reg);color:var(--reg);font-weight:600}
.st-failing{border-color:var(--reg);color:var(--reg);border-style:dashed;font-weight:600}
.st-acknowledged,.as-acknowledged{border-color:#9a6700;color:#9a6700}
.st-breached{border-color:#9a6700;color:#9a6700;border-style:dotted}
.st-in_band,.as-resolved{color:var(--imp)}
.st-insufficient_data,.as-rebaselined{color:var(--muted)}
.overview-top{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
.status{border:1px solid var(--line);border-radius:6px;padding:.2em .8em;flex:1 1 320px}
.status h2{margin:.4em 0}
.status dl,dl.labels,dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15em .8em;margin:.3em 0}
dt{color:var(--muted)}dd{margin:0}
.counts{flex:2 1 420px}
form.filters label,form.range label{margin-right:.4em;white-space:nowrap}
select,input,button{font:inherit}
button{padding:.2em .8em;border:1px solid var(--line);border-radius:4px;background:#f6f8fa;cursor:pointer}
fieldset.scale{display:inline;border:0;padding:0;margin:0}fieldset.scale legend{display:inline;float:left;margin-right:.4em;color:var(--muted)}
.spark{width:80px;height:20px}.spark polyline{fill:none;stroke:var(--fg);stroke-width:1.2}
.chart-box{margin:.6em 0;overflow-x:auto}
svg.chart{width:100%;min-width:600px;height:auto;display:block;border:1px solid var(--line);border-radius:4px;background:#fff}
.grid line{stroke:#eaeef2}.grid text{fill:var(--muted);font-size:11px}
.ylab{text-anchor:end}.axis-name{font-size:12px;text-anchor:end}
.band{fill:var(--band);fill-opacity:.45}.band-edge{fill:none;stroke:#0969da;stroke-width:1;stroke-dasharray:4 3}
.spread{stroke:#57606a;stroke-width:1.2}
.pt{stroke:#1b1f24;stroke-width:1;fill:#1b1f24;cursor:pointer}
.pt:focus,.pt:hover{stroke:#bf8700;stroke-width:3;outline:none}
.pt.k-insufficient{fill:#fff}
.pt.k-reg{fill:var(--reg);stroke:var(--reg)}.pt.k-imp{fill:var(--imp);stroke:var(--imp)}
.pt.k-inconclusive{fill:#fff;stroke:#6e7781}.pt.k-failed{fill:none;stroke:var(--reg);stroke-width:2}
.segment line{stroke:#57606a;stroke-dasharray:6 4}.segment text,.rebaseline text{font-size:11px;fill:#57606a}
.rebaseline line{stroke:#8250df;stroke-dasharray:2 3 8 3}
.attr line{stroke:#8c959f}.attr text{font-size:10px;fill:#57606a;text-anchor:middle}
.alert-mark line{stroke:var(--reg);stroke-width:1.2;stroke-dasharray:3 2}.alert-mark text{font-size:12px;font-weight:700;fill:var(--reg)}
.alert-mark.imp line{stroke:var(--imp)}.alert-mark.imp text{fill:var(--imp)}
.alert-mark.current text{text-decoration:underline}
.fire-ring{fill:none;stroke:#1b1f24;stroke-width:1.5}
ul.legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:.3em 1.1em;font-size:.9em}
ul.legend svg{width:14px;height:14px;vertical-align:-2px;margin-right:.3em}
.sw{display:inline-block;width:18px;height:10px;margin-right:.3em;vertical-align:0}
.band-sw{background:#c5e0ff;border:1px dashed #0969da}.spread-sw{border-left:2px solid #57606a;width:2px;height:12px}
.seg-sw{border-left:2px dashed #57606a;width:2px;height:12px}
figcaption{color:var(--muted);font-size:.9em}
nav.crumbs{margin-top:.8em;color:var(--muted)}
nav.pages{margin:.6em 0}nav.pages a{margin-left:.6em}
tr.run.k-failed td,tr.run.k-inconclusive td{color:var(--muted);font-style:italic}
tr.run.k-reg td:nth-child(8)::before{content:"\25B2 "}tr.run.k-imp td:nth-child(8)::before{content:"\25BC "}
.error{font-weight:600}.explain{font-size:1.05em}
form.ack{border:1px solid var(--line);border-radius:6px;padding:.6em .8em;max-width:640px}
output{display:block;margin-top:.5em;font-weight:600}
.tip{position:absolute;z-index:10;max-width:420px;background:#1b1f24;color:#fff;padding:.35em .6em;border-radius:4px;font-size:12px;pointer-events:none;white-space:pre-line}
@media (max-width:640px){
 main{padding:0 .5em 1em}header.top .sub{display:none}
 .status dl,dl.labels,dl.facts{grid-template-columns:1fr}dt{margin-top:.3em}
 th,td{padding:.25em .3em;font-size:.9em}
 table.keys th:nth-child(6),table.keys td:nth-child(6),table.keys th:nth-child(7),table.keys td:nth-child(7){display:none}
 table.open th:nth-child(7),table.open td:nth-child(7),table.open th:nth-child(8),table.open td:nth-child(8){display:none}
 form.filters label{display:block;margin:.2em 0}
}
)css";
  return kCss;
}

std::string_view script() {
  static constexpr std::string_view kJs = R"js("use strict";
// kernelwatch dashboard: tooltips for chart points on hover and keyboard focus, filters that
// apply on change, and the acknowledge form. The pages read without it.
(function () {
  var tip = document.getElementById("tip");
  function show(el) {
    var title = el.querySelector("title");
    if (!tip || !title) return;
    tip.textContent = title.textContent.split(" | ").join("\n");
    tip.hidden = false;
    var box = el.getBoundingClientRect();
    var left = Math.min(window.scrollX + box.left + 12, window.scrollX + document.documentElement.clientWidth - 300);
    tip.style.left = Math.max(4, left) + "px";
    tip.style.top = (window.scrollY + box.bottom + 8) + "px";
  }
  function hide() { if (tip) tip.hidden = true; }
  document.querySelectorAll(".pt[tabindex]").forEach(function (el) {
    el.addEventListener("focus", function () { show(el); });
    el.addEventListener("mouseenter", function () { show(el); });
    el.addEventListener("blur", hide);
    el.addEventListener("mouseleave", hide);
  });
  document.querySelectorAll("form.filters select").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });
  var form = document.getElementById("ack-form");
  if (form) {
    var result = document.getElementById("ack-result");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var token = document.getElementById("ack-token");
      var rebaseline = event.submitter && event.submitter.value === "rebaseline";
      var secret = token.value;
      token.value = "";
      result.textContent = "sending...";
      fetch(form.getAttribute("data-api"), {
        method: "POST",
        headers: { "Authorization": "Bearer " + secret, "Content-Type": "application/json" },
        body: JSON.stringify({ rebaseline: rebaseline }),
        credentials: "omit",
        cache: "no-store"
      }).then(function (response) {
        return response.json().then(function (body) {
          if (response.ok) {
            result.textContent = "done: the alert is " + body.state + ". Reloading...";
            window.location.reload();
          } else {
            result.textContent = "refused (" + response.status + "): " + (body.error || "");
          }
        });
      }).catch(function () { result.textContent = "the daemon did not answer"; });
    });
  }
})();
)js";
  return kJs;
}

}  // namespace kernelwatch::web
