package opsserver

// statusHTML is the status page: one self-contained document (no external
// assets), refreshed in place every two seconds by its script, which also
// says when the replica stops answering.
const statusHTML = `<!doctype html>
<html><head><meta charset="utf-8">
<title>ringfire {{.ID}}: {{if .Ready}}ready{{else}}not ready{{end}}</title>
<style>
body{font:13px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#212529;background:#fff}
header{display:flex;align-items:center;gap:12px;padding:10px 16px;border-bottom:1px solid #dee2e6}
h1{font-size:19px;margin:0;font-weight:400}h1 b{font-weight:700}
.badge{padding:2px 10px;border-radius:11px;font-weight:700;color:#fff;font-size:13px}
.ok{background:#2b8a3e}.bad{background:#e8590c}
.facts{margin-left:auto;color:#495057}
.waiting{background:#fff4e6;border-bottom:1px solid #ffc078;padding:7px 16px;color:#a33c00}
.stale{background:#fff5f5;border-bottom:1px solid #ffa8a8;padding:7px 16px;color:#c92a2a;display:none}
.unreachable .stale{display:block}.unreachable .main{opacity:.45}
.main{display:flex;gap:14px;padding:6px 12px}
.left{width:480px;flex:none}.side{flex:1;min-width:0}
h2{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:#868e96;margin:12px 0 4px;font-weight:700}
table{border-collapse:collapse;width:100%}
td,th{padding:3px 5px;text-align:right;white-space:nowrap}
th{font-weight:400;color:#868e96;font-size:11px}
td:first-child,th:first-child{text-align:left}
.sw{display:inline-block;width:13px;height:13px;border-radius:3px;vertical-align:-2px;margin-right:6px}
tr.this td{font-weight:700;background:#f1f3f5}
.note{color:#868e96;font-weight:400;font-size:11px}
.bar{position:relative;width:90px;height:8px;background:#f1f3f5;border-radius:4px}
.bar i{position:absolute;left:0;top:0;bottom:0;border-radius:4px}
.bar b{position:absolute;top:-3px;bottom:-3px;width:2px;margin-left:-1px;background:#212529}
.jobs .bar{width:160px}.jobs .bar i{background:#4c6ef5}.jobs .final .bar i{background:#adb5bd}
.bad-num{color:#c92a2a;font-weight:700}
.key{display:flex;flex-wrap:wrap;gap:4px 14px;color:#495057;font-size:12px;margin:2px 0 0 8px}
.key svg{vertical-align:-3px;margin-right:4px}
.empty{color:#868e96;font-style:italic}
footer{color:#adb5bd;font-size:11px;margin:8px 0 0 8px}
svg.ring path.unowned{stroke:#e03131;stroke-width:1.3}
svg.ring path.handover{stroke:#212529;stroke-width:.9}
svg.ring text{text-anchor:middle;fill:#495057;font-size:13px}
svg.ring text.big{font-size:34px;font-weight:700;fill:#212529}
svg.ring text.settled{font-size:22px;font-weight:700;fill:#2b8a3e}
svg.ring text.moving{fill:#d9480f}
</style>
<script>
// Refresh the page in place every two seconds; say so when the replica
// stops answering, and keep the last page seen. A saved copy stays as saved.
addEventListener("DOMContentLoaded", function () {
  if (location.protocol === "file:") return;
  var last = new Date();
  setInterval(function () {
    fetch(location.pathname, {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      document.body.className = "";
      document.title = doc.title;
      document.getElementById("page").replaceWith(doc.getElementById("page"));
      last = new Date();
    }).catch(function (e) {
      document.body.className = "unreachable";
      document.getElementById("stale").textContent =
        "This replica does not answer (" + e.message + "); the page shows it as of " + last.toLocaleTimeString() + ".";
    });
  }, 2000);
});
</script>
</head>
<body><div id="stale" class="stale"></div><div id="page">
<header><h1>ringfire replica {{range .Legend}}{{if .This}}<span class="sw" style="background:{{.Colour}}"></span>{{end}}{{end}}<b>{{.ID}}</b></h1>
{{if .Ready}}<span class="badge ok">ready</span>{{else}}<span class="badge bad">not ready</span>{{end}}
<span class="facts">{{.Slots}} slots · {{len .Members}} members · member view at etcd revision {{.Revision}}</span></header>
{{if not .Ready}}<div class="waiting" id="waiting"><b>Waiting for:</b> {{.NotReady}}</div>{{end}}
{{if .PoliciesMissing}}<div class="waiting" id="policies"><b>Admission policies missing</b> (admission does not refuse what only they refuse; install deploy/crds): {{range $i, $p := .PoliciesMissing}}{{if $i}}, {{end}}{{$p}}{{end}}</div>{{end}}
<div class="main">
<div class="left">
<svg class="ring" width="480" height="480" viewBox="-240 -240 480 480" role="img" aria-label="the ring's slots by holder">
{{range .Cells}}<path d="{{.Path}}" fill="{{.Fill}}" class="{{.Class}}" data-slot="{{.Slot}}"><title>{{.Title}}</title></path>
{{if .To}}<path d="{{.To}}" fill="{{.ToFill}}" class="to" pointer-events="none"/>{{end}}{{if .Dot}}<circle cx="{{.DotX}}" cy="{{.DotY}}" r="1.7" fill="#111" class="moved" pointer-events="none"/>{{end}}
{{end}}
{{if not .Cells}}<circle r="180" fill="none" stroke="#dee2e6" stroke-width="100"/><text y="5">the slot keys have not been read yet</text>
{{else if .Moving}}<text class="big moving" y="-22" id="moving">{{.Moving}}</text><text class="moving" y="-2">slots in motion</text>
<text y="22">{{len .Handover}} being handed over</text><text y="40">{{len .Unowned}} unowned</text>
{{else}}<text class="settled" y="-8" id="moving">settled</text><text y="14">every slot held as assigned</text>
{{end}}
{{if .Cells}}<text y="{{if .Moving}}62{{else}}34{{end}}">{{len .Moved}} moved in the last {{.MovedWithin}}</text>{{end}}
</svg>
<div class="key">
<span><svg width="14" height="14"><rect x=".5" y=".5" width="13" height="13" fill="#868e96" stroke="#212529"/><rect x=".5" y="8" width="13" height="5.5" fill="#dee2e6"/></svg>being handed over: holder's colour outside, assignee's inside</span>
<span><svg width="14" height="14"><rect x="1" y="1" width="12" height="12" fill="#fff0f0" stroke="#e03131" stroke-width="1.5"/><rect x="1.7" y="8" width="10.6" height="4.3" fill="#dee2e6"/></svg>unowned</span>
<span><svg width="14" height="14"><rect width="14" height="14" fill="#868e96"/><circle cx="7" cy="7" r="2" fill="#111"/></svg>moved in the last {{.MovedWithin}}</span>
<span><svg width="14" height="14"><rect y="5" width="6" height="9" fill="#868e96"/><rect x="8" width="6" height="14" fill="#868e96"/></svg>raised: held by this replica</span>
<span>slot 0 at the top of the outer lane, then clockwise lane by lane</span>
</div>
</div>
<div class="side">
<h2>Members: slots held · assigned</h2>
<table class="legend">
{{range .Legend}}<tr class="member{{if .This}} this{{end}}" data-member="{{.ID}}" data-colour="{{.Colour}}"><td><span class="sw" style="background:{{.Colour}}"></span>{{.ID}}{{if .This}} <span class="note">this replica</span>{{end}}{{if not .Member}} <span class="note">left, still holding</span>{{end}}</td>
<td{{if ne .Held .Assigned}} class="bad-num"{{end}}>{{.Held}}</td><td>{{.Assigned}}</td>
<td><div class="bar"><i style="width:{{pct .Held $.MaxSlots}};background:{{.Colour}}"></i><b style="left:{{pct .Assigned $.MaxSlots}}"></b></div></td></tr>
{{end}}</table>
<h2>Controllers{{if .RateWindowSeconds}} <span class="note">(rates over the last {{printf "%.0f" .RateWindowSeconds}} s)</span>{{end}}</h2>
{{if .Controllers}}<table class="work"><tr><th>controller</th><th>queued</th><th>reconciles/s</th><th>errors</th><th>give-ups</th></tr>
{{range .Controllers}}<tr data-controller="{{.Name}}"><td>{{.Name}}</td><td>{{num .Depth}}</td><td>{{rate .PerSecond}}</td><td{{if .Errors}} class="bad-num"{{end}}>{{num .Errors}}</td><td{{if .GiveUps}} class="bad-num"{{end}}>{{num .GiveUps}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">no controller metrics on this replica (workqueue_depth, workqueue_work_duration_seconds)</p>{{end}}
<h2>Jobs by phase <span class="note">(of the slots held here)</span></h2>
{{if .Jobs}}<table class="jobs">
{{range .Jobs}}<tr class="phase{{if .Final}} final{{end}}" data-phase="{{.Phase}}"><td>{{.Phase}}</td><td>{{.Jobs}}</td><td><div class="bar"><i style="width:{{pct .Jobs $.MaxJobs}}"></i></div></td></tr>
{{end}}</table>
{{else if .JobsMetric}}<p class="empty">no Jobs in the slots held here</p>
{{else}}<p class="empty">no ringfire_jobs metric on this replica</p>{{end}}
<footer>{{.Time.Format "15:04:05"}} · refreshes every 2 s · <a href="status.json">status.json</a> · <a href="metrics">metrics</a></footer>
</div>
</div>
</div></body></html>`
