#!/usr/bin/env python3
"""The options of each command as `jitsframe CMD --help` prints them and as
the man page jitsframe(1) lists them; tests/t_man.sh compares the two.

  manopts.py help CMD... <HELP-TEXT    print the options the help text of
                                        command CMD ("" for the top level)
                                        names, one a line
  manopts.py man PAGE                  print "CMD<TAB>OPTION" for every
                                        option the page lists ("" = global)
  manopts.py commands <HELP-TEXT       the commands `jitsframe --help` lists
  manopts.py compare JITSFRAME PAGE    compare all; print the differences,
                                        exit 1 if any
  manopts.py source FILE              the options a cli/*.c getopt_long
                                        table and short-option string accept

Help text: the options of the usage block (from "Usage:" to the first blank
line; for a "region X" command only the lines of that subcommand, for
"audit" not the "audit replay" line), and the first column of every option
line (a line whose first non-blank is '-') after it; `quoted` text is
another program's command line, not options. Man page: the tags
(the line after .TP) of the OPTIONS section (global) and of each .SS
subsection of COMMANDS, whose title is the command. -h/--help are left out
on both sides: every command has them.
"""
import re
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")
HELP = {"-h", "--help"}


def opts_in(text):
    # `...` quotes another program's command line (`perf inject --jit`)
    text = re.sub(r"`[^`]*`", "", text)
    return {m.group(1) for m in OPT.finditer(text)}


def help_opts(text, cmd):
    lines = text.split("\n")
    out = set()
    i = 0
    while i < len(lines) and not lines[i].startswith("Usage:"):
        i += 1
    usage = []
    while i < len(lines) and lines[i].strip():
        usage.append(lines[i])
        i += 1
    words = cmd.split()
    if len(words) == 2 and words[0] == "region":
        # the block of this subcommand: its synopsis lines and the
        # description under them, up to the next synopsis line
        mine = False
        for ln in usage:
            m = re.match(r"\s*jitsframe region (\w+)", ln)
            if m:
                mine = m.group(1) == words[1]
            if mine:
                out |= opts_in(re.sub(r"jitsframe region \w+", "", ln))
    else:
        for ln in usage:
            if cmd == "audit" and "audit replay" in ln:
                continue
            out |= opts_in(re.sub(r"Usage:|jitsframe( \w+)*", "", ln, count=1))
    for ln in lines[i:]:
        if re.match(r"\s+-", ln):
            first = re.split(r"\s{2,}", ln.strip())[0]
            out |= opts_in(first)
    return out - HELP


def unroff(s):
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    s = s.replace("\\-", "-").replace("\\(em", "-").replace("\\ ", " ")
    s = re.sub(r"\\\(..", "", s)
    s = s.replace("\\&", "").replace('"', "")
    return re.sub(r"^\.[A-Z]+\s*", "", s)


def man_opts(src):
    """{command: set of options}; command "" = the OPTIONS section."""
    res = {}
    sect = sub = None
    lines = src.split("\n")
    # join roff continuation lines (ending in a backslash)
    joined = []
    for ln in lines:
        if joined and joined[-1].endswith("\\") and not joined[-1].endswith("\\\\"):
            joined[-1] = joined[-1][:-1] + ln
        else:
            joined.append(ln)
    for i, ln in enumerate(joined):
        if ln.startswith(".SH"):
            sect = unroff(ln[3:]).strip()
            sub = "" if sect == "OPTIONS" else None
            if sub is not None:
                res.setdefault(sub, set())
        elif ln.startswith(".SS") and sect == "COMMANDS":
            sub = unroff(ln[3:]).strip()
            res.setdefault(sub, set())
        elif ln.startswith(".TP") and sub is not None and i + 1 < len(joined):
            res[sub] |= opts_in(unroff(joined[i + 1]))
    return {k: v - HELP for k, v in res.items()}


def commands(text):
    out = set()
    inside = False
    for ln in text.split("\n"):
        if ln.startswith("Commands:"):
            inside = True
            continue
        if inside and not ln.strip():
            break
        m = re.match(r"  ([a-z]+(?: [a-z]+)*)(?=\s|$)", ln) if inside else None
        if m:
            out.add(m.group(1))
    return out


def source_opts(src):
    out = set()
    for m in re.finditer(r"struct option \w+\[\] = \{(.*?)\};", src, re.S):
        out |= {"--" + n for n in re.findall(r'\{"([\w-]+)"', m.group(1))}
    for m in re.finditer(r'getopt_long\(\s*\w+,\s*\w+,\s*"([^"]*)"', src):
        out |= {"-" + c for c in m.group(1) if c.isalnum()}
    return out - HELP


def run_help(jsf, cmd):
    p = subprocess.run([jsf] + cmd.split() + ["--help"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{jsf} {cmd} --help: exit {p.returncode}")
    return p.stdout


def compare(jsf, page):
    bad = []
    man = man_opts(open(page).read())
    cmds = commands(run_help(jsf, ""))
    if not cmds:
        bad.append("`jitsframe --help` lists no commands")
    if set(man) - {""} != cmds:
        bad.append(
            f"commands: --help only {sorted(cmds - set(man))}, "
            f"man page only {sorted(set(man) - {''} - cmds)}"
        )
    for cmd in sorted(cmds | {""}):
        h = help_opts(run_help(jsf, cmd), cmd)
        m = man.get(cmd, set())
        if h != m:
            bad.append(
                f"{cmd or '(global)'}: --help only {sorted(h - m)}, "
                f"man page only {sorted(m - h)}"
            )
    return bad


def main():
    a = sys.argv[1:]
    if a[0] == "help":
        text = sys.stdin.read()
        print("\n".join(sorted(help_opts(text, " ".join(a[1:])))))
    elif a[0] == "man":
        for c, s in sorted(man_opts(open(a[1]).read()).items()):
            for o in sorted(s):
                print(f"{c}\t{o}")
    elif a[0] == "commands":
        print("\n".join(sorted(commands(sys.stdin.read()))))
    elif a[0] == "source":
        print("\n".join(sorted(source_opts(open(a[1]).read()))))
    elif a[0] == "compare":
        bad = compare(a[1], a[2])
        for b in bad:
            print(b)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
