"""``h.stats.write_html(path)``: one self-contained HTML report of a traced launch.

The file needs no network (no CDN, no fonts, no external scripts: inline CSS, JS and SVG) and
holds: a summary; a zoomable, pannable timeline (canvas) with one lane per pipe of every core and
an "all cores" group on top — per pipe, the share of cores busy in each pixel column; the source
profile beside the kernel's source; a roofline plot (inline SVG) with this launch's point; and the
bottleneck report.  Element ids the tests (and users' scripts) can rely on: ``summary``,
``timeline`` (the canvas, ``data-events`` = events drawn), ``source-profile`` (a table, one
``tr.line`` per source line), ``roofline`` (the SVG, with a ``circle#launch-point``), ``advice``.
"""
from __future__ import annotations

import html
import json
import math

from . import model
from .advice import Advice
from .source import SourceProfile

_COLORS = {"scalar": "#8c8c8c", "mte2": "#1f77b4", "mte1": "#17becf", "cube": "#d62728", "fix": "#9467bd",
           "vector": "#2ca02c", "mte3": "#ff7f0e"}


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _timeline_data(stats, t) -> dict:
    code = stats._code
    names = []
    name_of = {}
    idx_name = []
    for inst in code:
        label = inst.mnemonic
        if inst.loc is not None:
            label += f" (line {inst.loc[1]})"
        if label not in name_of:
            name_of[label] = len(names)
            names.append(label)
        idx_name.append(name_of[label])
    ev = t.ev
    flat = []
    for row in ev.tolist():
        core, p, start, dur, idx, _ = row
        flat.extend((core, p, start, dur, idx_name[idx]))
    return {"cores": len(stats.core_cycles), "pipes": model.PIPE_NAMES, "colors": [_COLORS[p] for p in model.PIPE_NAMES],
            "cycles": stats.cycles, "names": names, "ev": flat, "core_cycles": list(stats.core_cycles)}


def _roofline_svg(stats) -> str:
    """Log-log roofline: FLOP/cycle against FLOP per GM byte, with this launch's point; for a
    launch without dots, GM bytes/cycle against the machine's DDR rate."""
    m = stats.machine
    cores = stats.cores
    gm = stats.read_bytes + stats.write_bytes
    W, H, L, B = 520, 300, 60, 40
    out = [f'<svg id="roofline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-size="11" font-family="sans-serif">',
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>']
    if stats.cube_macs:
        dt = max(stats.macs_by_dtype, key=stats.macs_by_dtype.get)
        peak = 2 * cores * m.macs_per_cycle(dt)                 # FLOP/cycle
        bw = cores * m.ddr_bytes_per_cycle                       # B/cycle
        ai = 2 * stats.cube_macs / gm if gm else 1.0
        perf = 2 * stats.cube_macs / stats.cycles if stats.cycles else 0.0
        xlab, ylab = "FLOP per GM byte", "FLOP per cycle"
    else:
        peak = cores * m.ddr_bytes_per_cycle                     # B/cycle: the roof of a copy kernel
        bw = peak
        ai = 1.0
        perf = gm / stats.cycles if stats.cycles else 0.0
        xlab, ylab = "(no dots: bytes per byte)", "GM bytes per cycle"
    ridge = peak / bw
    x0 = 10 ** math.floor(math.log10(max(min(ai, ridge) / 4, 1e-3)))
    x1 = 10 ** math.ceil(math.log10(max(ai, ridge) * 4))
    y1 = 10 ** math.ceil(math.log10(peak * 2))
    y0 = 10 ** math.floor(math.log10(max(min(perf, bw * x0) / 2, 1e-6)))

    def X(v):
        return L + (W - L - 20) * (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def Y(v):
        return H - B - (H - B - 20) * (math.log10(max(v, y0)) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))
    out.append(f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="#333"/>'
               f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="#333"/>')
    d = 10 ** math.floor(math.log10(x0))
    while d <= x1:
        if d >= x0:
            out.append(f'<line x1="{X(d):.1f}" y1="{H - B}" x2="{X(d):.1f}" y2="{H - B + 4}" stroke="#333"/>'
                       f'<text x="{X(d):.1f}" y="{H - B + 16}" text-anchor="middle">{d:g}</text>')
        d *= 10
    d = y0
    while d <= y1:
        out.append(f'<line x1="{L - 4}" y1="{Y(d):.1f}" x2="{L}" y2="{Y(d):.1f}" stroke="#333"/>'
                   f'<text x="{L - 6}" y="{Y(d) + 4:.1f}" text-anchor="end">{d:g}</text>')
        d *= 10
    xa = max(x0, y0 / bw)
    out.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{X(xa):.1f},{Y(bw * xa):.1f} '
               f'{X(ridge):.1f},{Y(peak):.1f} {X(x1):.1f},{Y(peak):.1f}"/>')
    out.append(f'<text x="{X(x1) - 4:.1f}" y="{Y(peak) - 6:.1f}" text-anchor="end">peak {peak:g}/cycle '
               f'({cores} cores)</text>')
    out.append(f'<circle id="launch-point" cx="{X(ai):.1f}" cy="{Y(perf):.1f}" r="5" fill="#d62728">'
               f'<title>this launch: {perf:.3g} at {ai:.3g}</title></circle>')
    out.append(f'<text x="{X(ai) + 8:.1f}" y="{Y(perf) + 4:.1f}" fill="#d62728">this launch '
               f'({perf:.3g}; efficiency {stats.efficiency:.2f})</text>')
    out.append(f'<text x="{(L + W - 20) / 2:.0f}" y="{H - 6}" text-anchor="middle">{_esc(xlab)}</text>'
               f'<text x="14" y="{(H - B) / 2:.0f}" transform="rotate(-90 14 {(H - B) / 2:.0f})" '
               f'text-anchor="middle">{_esc(ylab)}</text></svg>')
    return "".join(out)


def _source_table(sp: SourceProfile) -> str:
    pipes, paths = sp.pipes(), sp.paths()
    head = ("<tr><th>line</th><th class='src'>source</th><th>% slowest core</th>" + "".join(f"<th>{p}</th>" for p in pipes)
            + "".join(f"<th>{_esc(k)} B</th>" for k in paths) + "<th>DDR %</th><th>stall caused</th></tr>")
    rows = []
    cur = None
    for r in sp.rows:
        if r.function != cur:
            cur = r.function
            label = f"{r.function}()" if r.function else "(no source line)"
            if r.callers:
                label += f" — inlined helper, called from line {', '.join(map(str, r.callers))}"
            rows.append(f'<tr class="fn"><td colspan="{5 + len(pipes) + len(paths)}">{_esc(label)}</td></tr>')
        c = r.cost
        src = _esc(r.text.rstrip()) or "&nbsp;"
        num = (str(r.line) + ("+" if r.rolled_up else "")) if r.line else ""
        if c is None:
            rows.append(f'<tr class="line idle"><td class="n">{num}</td><td class="src"><pre>{src}</pre></td>'
                        + "<td></td>" * (3 + len(pipes) + len(paths)) + "</tr>")
            continue
        share = 100.0 * c.busy_slowest / sp.slowest_cycles if sp.slowest_cycles else 0.0
        reads = c.ddr_beats + c.l2_beats
        cells = "".join(f"<td>{c.cycles[p] or ''}</td>" for p in pipes)
        cells += "".join(f"<td>{c.bytes.get(k, 0) or ''}</td>" for k in paths)
        rows.append(f'<tr class="line"><td class="n">{num}</td><td class="src"><pre>{src}</pre></td>'
                    f'<td class="share"><div class="bar" style="width:{min(share, 100):.1f}%"></div>'
                    f'<span>{share:.1f}</span></td>{cells}'
                    f'<td>{(f"{100.0 * c.ddr_beats / reads:.0f}") if reads else ""}</td>'
                    f'<td>{c.stall_caused or ""}</td></tr>')
    return f'<table id="source-profile"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


_CSS = """
body{font-family:sans-serif;margin:16px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:24px}
#summary td{padding:2px 10px 2px 0}.grid{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start}
#tlwrap{border:1px solid #ccc;position:relative}#timeline{display:block;width:100%;cursor:grab}
#tip{position:absolute;background:#ffe;border:1px solid #999;padding:2px 6px;font-size:12px;pointer-events:none;display:none}
table{border-collapse:collapse;font-size:12px}#source-profile td,#source-profile th{padding:1px 6px;text-align:right;
border-bottom:1px solid #eee}#source-profile td.src,#source-profile th.src{text-align:left}#source-profile pre{margin:0;font-size:12px}
#source-profile tr.idle{color:#999}#source-profile tr.fn td{text-align:left;font-weight:bold;background:#f3f3f3}
td.share{position:relative;min-width:70px}td.share .bar{position:absolute;left:0;top:2px;bottom:2px;background:#fbb}
td.share span{position:relative}#advice li{margin:3px 0}.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
"""

_JS = r"""
(function(){
const D=JSON.parse(document.getElementById('tl-data').textContent);
const cv=document.getElementById('timeline'),tip=document.getElementById('tip');
const P=D.pipes.length,LH=12,GAP=6,HEAD=16;
const lanes=[];lanes.push({label:'all cores',all:true});
for(let c=0;c<D.cores;c++)lanes.push({label:'core '+c,core:c});
const H=HEAD+lanes.length*(P*LH+GAP);
let t0=0,t1=Math.max(D.cycles,1),W=0;
const byCore=[];for(let c=0;c<D.cores;c++)byCore.push([]);
for(let i=0;i<D.ev.length;i+=5){byCore[D.ev[i]].push(i);}
cv.dataset.events=String(D.ev.length/5);
function resize(){W=cv.clientWidth||1000;cv.width=W;cv.height=H;draw();}
const L=104;
function x(t){return L+(t-t0)/(t1-t0)*(W-L-4);}
function draw(){
 const g=cv.getContext('2d');g.fillStyle='#fff';g.fillRect(0,0,W,H);g.font='10px sans-serif';
 g.fillStyle='#444';const span=t1-t0,step=Math.pow(10,Math.floor(Math.log10(span/5)));
 for(let t=Math.ceil(t0/step)*step;t<=t1;t+=step){g.fillRect(x(t),HEAD-4,1,4);g.fillText(String(Math.round(t)),x(t)+2,HEAD-6);}
 const cols=W-L;const bins=[];for(let p=0;p<P;p++)bins.push(new Float32Array(cols));
 lanes.forEach((ln,k)=>{
  const y0=HEAD+k*(P*LH+GAP);g.fillStyle='#000';g.fillText(ln.label,2,y0+10);
  for(let p=0;p<P;p++){g.fillStyle='#f6f6f6';g.fillRect(L,y0+p*LH,W-L,LH-1);g.fillStyle='#777';g.textAlign='right';g.fillText(D.pipes[p],L-4,y0+p*LH+9);g.textAlign='left';}
  if(ln.all)return;
  for(const i of byCore[ln.core]){
   const p=D.ev[i+1],s=D.ev[i+2],d=D.ev[i+3];if(s+d<t0||s>t1)continue;
   const a=Math.max(x(s),L),b=Math.min(x(s+d),W);g.fillStyle=D.colors[p];g.fillRect(a,y0+p*LH,Math.max(b-a,0.5),LH-1);
   const c0=Math.max(0,Math.floor(a-L)),c1=Math.min(cols-1,Math.floor(b-L));for(let c=c0;c<=c1;c++)bins[p][c]+=1;}
 });
 const y0=HEAD;
 for(let p=0;p<P;p++)for(let c=0;c<cols;c++){const v=bins[p][c];if(!v)continue;
  g.globalAlpha=Math.min(1,v/Math.max(D.cores,1));g.fillStyle=D.colors[p];g.fillRect(L+c,y0+p*LH,1,LH-1);}
 g.globalAlpha=1;
}
function hit(mx,my){const k=Math.floor((my-HEAD)/(P*LH+GAP));if(k<1||k>=lanes.length)return null;
 const p=Math.floor((my-HEAD-k*(P*LH+GAP))/LH);if(p<0||p>=P)return null;const t=t0+(mx-L)/(W-L-4)*(t1-t0);
 for(const i of byCore[lanes[k].core]){if(D.ev[i+1]===p&&D.ev[i+2]<=t&&t<=D.ev[i+2]+D.ev[i+3])return i;}return null;}
cv.addEventListener('wheel',e=>{e.preventDefault();const r=cv.getBoundingClientRect();const mx=e.clientX-r.left;
 const t=t0+(mx-L)/(W-L-4)*(t1-t0);const f=e.deltaY<0?0.8:1.25;t0=t-(t-t0)*f;t1=t+(t1-t)*f;
 if(t1-t0<10){t1=t0+10;}draw();},{passive:false});
let drag=null;cv.addEventListener('mousedown',e=>{drag={x:e.clientX,a:t0,b:t1};cv.style.cursor='grabbing';});
window.addEventListener('mouseup',()=>{drag=null;cv.style.cursor='grab';});
cv.addEventListener('mousemove',e=>{const r=cv.getBoundingClientRect();
 if(drag){const dt=(e.clientX-drag.x)/(W-L-4)*(drag.b-drag.a);t0=drag.a-dt;t1=drag.b-dt;draw();return;}
 const i=hit(e.clientX-r.left,e.clientY-r.top);if(i===null){tip.style.display='none';return;}
 tip.style.display='block';tip.style.left=(e.clientX-r.left+12)+'px';tip.style.top=(e.clientY-r.top+12)+'px';
 tip.textContent=D.names[D.ev[i+4]]+': cycles '+D.ev[i+2]+'..'+(D.ev[i+2]+D.ev[i+3])+' ('+D.ev[i+3]+')';});
cv.addEventListener('dblclick',()=>{t0=0;t1=Math.max(D.cycles,1);draw();});
window.addEventListener('resize',resize);resize();
})();
"""


def render(stats) -> str:
    """The report as one HTML string."""
    t = model.build(stats)
    sp = SourceProfile(stats)
    adv = Advice(stats)
    data = _timeline_data(stats, t)
    st = stats
    grid = st.grid[:max(1, len([g for g in st.grid if g > 1]) or 1)]
    summary = [("kernel", st.kernel), ("cycles", f"{st.cycles} ({st.time_us:.2f} us at {st.machine.clock_ghz} GHz)"),
               ("grid", f"{grid} = {st.programs} programs on {st.cores_used} of {st.cores} cores ({st.machine.name})"),
               ("roofline", f"{st.roofline_cycles:.1f} cycles, bound by {st.roofline_bound}; "
                            f"efficiency {st.efficiency:.3f}"),
               ("GM", f"read {st.read_bytes} B, written {st.write_bytes} B, {st.cube_macs} MACs"),
               ("pipes busy (all cores)", ", ".join(f"{p} {st.pipe_busy[p]}" for p in model.ORDER))]
    legend = "".join(f'<span><i style="background:{_COLORS[p]}"></i>{p}</span>' for p in model.ORDER)
    adv_html = []
    titles = {"bound": "Bound", "balance": "Core balance", "reads": "GM reads", "stalls": "Sync stalls",
              "memory": "On-chip memory", "try": "What to try"}
    for name, items in adv.sections.items():
        tag = "ol" if name == "try" else "ul"
        adv_html.append(f'<h3>{titles.get(name, name)}</h3><{tag} class="{name}">'
                        + "".join(f"<li>{_esc(f.text)}</li>" for f in items) + f"</{tag}>")
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tritonpu profile: {_esc(st.kernel)}</title>
<style>{_CSS}</style></head><body>
<h1>tritonpu profile: {_esc(st.kernel)}</h1>
<table id="summary">{''.join(f'<tr><td><b>{_esc(k)}</b></td><td>{_esc(v)}</td></tr>' for k, v in summary)}</table>
<h2>Timeline</h2>
<div class="legend">{legend} — wheel: zoom, drag: pan, double-click: reset; "all cores": share of cores with the pipe busy</div>
<div id="tlwrap"><canvas id="timeline" height="200"></canvas><div id="tip"></div></div>
<div class="grid">
<div><h2>Source profile</h2>{_source_table(sp)}
<p style="font-size:12px">% slowest core: share of core {sp.slowest}'s {sp.slowest_cycles} cycles during which the line
ran on some pipe; pipe columns: busy cycles over all cores; stall caused: cycles pipes waited on flags the line produced;
+: includes inlined helpers.</p></div>
<div><h2>Roofline</h2>{_roofline_svg(st)}
<h2>Bottleneck report</h2><div id="advice">{''.join(adv_html)}</div></div>
</div>
<script type="application/json" id="tl-data">{payload}</script>
<script>{_JS}</script>
</body></html>
"""


def write_html(stats, path) -> None:
    model.need_trace(stats)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(stats))
