/* SPDX-License-Identifier: MIT */
/*
 * The HTML flame graph (profile.h): d3-flame-graph (viewer.c) inlined with
 * the profile as JSON (tree.c), so that the page works offline from
 * file://; and the page written instead when the viewer is missing.
 */
#include "profint.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the page's script, in two parts around the colour mapper (a profile with
 * Lua frames gets the one that colours them too) */
static const char html_script[] =
    "(function () {\n"
    "  var data = JSON.parse("
    "document.getElementById('profile-data').textContent);\n"
    "  var el = document.getElementById('chart');\n"
    "  if (!data.value) {\n"
    "    el.textContent = 'No samples.';\n"
    "    return;\n"
    "  }\n"
    "  var w = Math.max(600, (el.clientWidth || 1200) - 4);\n"
    "  var chart = flamegraph.default().width(w).cellHeight(18)\n"
    "    .minFrameSize(1).sort(true)\n";
static const char html_colors[] =
    "    .setColorMapper(function (d, c) {\n"
    "      return d.highlight ? c : d.data.j ? '#3fb8af' : c;\n"
    "    })\n";
static const char html_colors_lua[] =
    "    .setColorMapper(function (d, c) {\n"
    "      return d.highlight ? c : d.data.j ? '#3fb8af' :\n"
    "        d.data.l ? '#a58fd8' : c;\n"
    "    })\n";
static const char html_script2[] =
    "    .setDetailsElement(document.getElementById('details'));\n"
    /* the first drawing is finished at once: d3-flame-graph animates
     * new frames in (rect widths, then labels), and printing or a
     * headless browser may never see the animation end; so stop it and
     * give each frame its final width and label (d3-flame-graph 5 keeps
     * both on the frame's <g>: width and name attributes) */
    "  chart.transitionDuration(0);\n"
    "  d3.select('#chart').datum(data).call(chart);\n"
    "  d3.selectAll('#chart g.frame').each(function () {\n"
    "    var g = d3.select(this);\n"
    "    g.interrupt();\n"
    "    g.select('rect').interrupt().attr('width', g.attr('width'));\n"
    "    g.select('foreignObject div').interrupt().text(g.attr('name'));\n"
    "  });\n"
    "  chart.transitionDuration(500);\n"
    "  document.getElementById('search').addEventListener('input',\n"
    "    function (e) { chart.search(e.target.value); });\n"
    "  document.getElementById('reset').addEventListener('click',\n"
    "    function () { document.getElementById('search').value = '';\n"
    "      chart.clear(); chart.resetZoom(); });\n"
    "})();\n";

/* Open the page (atomically) and write its head up to the escaped title. */
static int page_open(struct afile *a, const char *path, const char *title)
{
	int err = pf_af_open(a, path);
	if (err)
		return err;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\">\n<title>",
	      a->f);
	pf_markup_text(a->f, title, SIZE_MAX);
	return 0;
}

int prof_write_html(const struct prof *p, const char *path, const char *title)
{
	if (!p || !path)
		return -EINVAL;
	if (!title)
		title = "jitsframe";
	char dir[PATH_MAX];
	int err = pf_find_viewer(dir, sizeof(dir), NULL, 0);
	if (err)
		return err;
	struct afile a;
	err = page_open(&a, path, title);
	if (err)
		return err;
	FILE *o = a.f;
	fputs("</title>\n<style>\n", o);
	err = pf_inline_asset(o, dir, pf_viewer_files[PF_VIEWER_CSS]);
	fputs(
	    "</style>\n<style>\n"
	    "body{font-family:sans-serif;margin:12px}\n"
	    "h1{font-size:18px;margin:0 0 6px}\n"
	    "#bar{margin:6px 0;font-size:13px;color:#444}\n"
	    "#details{min-height:1.4em;font-family:monospace;font-size:12px}\n"
	    "</style>\n</head>\n<body>\n<h1>",
	    o);
	pf_markup_text(o, title, SIZE_MAX);
	bool lua = false;
	for (size_t i = 0; i < p->nframes && !lua; i++)
		lua = p->frames[i].kind == PF_LUA;
	fprintf(o,
		"</h1>\n<div id=\"bar\">%llu samples; trace frames (suffix "
		"_[j]) in teal; %sclick a frame to zoom. "
		"<input id=\"search\" placeholder=\"search\"> "
		"<button id=\"reset\">reset</button></div>\n"
		"<div id=\"chart\"></div>\n<div id=\"details\"></div>\n"
		"<script>\n",
		(unsigned long long)p->total,
		lua ? "Lua frames (suffix _[l]) in violet; " : "");
	if (!err)
		err = pf_inline_asset(o, dir, pf_viewer_files[PF_VIEWER_D3]);
	fputs("\n</script>\n<script>\n", o);
	if (!err)
		err = pf_inline_asset(o, dir, pf_viewer_files[PF_VIEWER_FLAME]);
	fputs("\n</script>\n"
	      "<script id=\"profile-data\" type=\"application/json\">\n",
	      o);
	if (!err)
		err = pf_write_tree_json(o, p);
	fputs("</script>\n<script>\n", o);
	fputs(html_script, o);
	fputs(lua ? html_colors_lua : html_colors, o);
	fputs(html_script2, o);
	fputs("</script>\n</body>\n</html>\n", o);
	if (!err && ferror(o))
		err = -EIO;
	return pf_af_close(&a, path, err, 0);
}

/* No script, no data: a page that says what is missing and how to get
 * it. */
int prof_write_html_unavailable(const struct prof *p, const char *path,
				const char *title)
{
	if (!p || !path)
		return -EINVAL;
	if (!title)
		title = "jitsframe";
	char dir[PATH_MAX], where[3 * PATH_MAX];
	if (!pf_find_viewer(dir, sizeof(dir), where, sizeof(where)))
		snprintf(where, sizeof(where),
			 "(it is in %s now: write the page again)", dir);
	struct afile a;
	int err = page_open(&a, path, title);
	if (err)
		return err;
	FILE *o = a.f;
	fputs(": flame graph viewer unavailable</title>\n<style>\n"
	      "body{font-family:sans-serif;margin:12px;max-width:60em}\n"
	      "h1{font-size:18px;margin:0 0 6px}\n"
	      "code{background:#eee;padding:0 3px}\n"
	      "</style>\n</head>\n<body>\n<h1>",
	      o);
	pf_markup_text(o, title, SIZE_MAX);
	fputs("</h1>\n<p id=\"viewer-unavailable\"><strong>The interactive "
	      "flame graph viewer is unavailable.</strong> Its files "
	      "(d3-flame-graph and d3) were not found when this page was "
	      "written: looked for ",
	      o);
	pf_markup_text(o, where, SIZE_MAX);
	fprintf(o,
		".</p>\n<p>The profile has %llu samples. The files written "
		"beside this page by <code>jitsframe report</code> hold it: "
		"<code>flamegraph.svg</code> (a static flame graph; open it "
		"in a browser), <code>stacks.folded</code> and "
		"<code>profile.pb.gz</code> (pprof).</p>\n",
		(unsigned long long)p->total);
	fputs("<p>To get the viewer: run <code>make</code> in the jitsframe "
	      "source tree with <code>npm</code> installed and the npm "
	      "registry reachable (it vendors the viewer into "
	      "<code>build/viewer</code>), or set "
	      "<code>JITSFRAME_VIEWER=DIR</code> to a directory holding its "
	      "<code>node_modules/</code>; then run <code>jitsframe report "
	      "DIR</code> again.</p>\n</body>\n</html>\n",
	      o);
	if (ferror(o))
		err = -EIO;
	return pf_af_close(&a, path, err, 0);
}
