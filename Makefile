# jitsframe — top-level build. `make` builds the libraries, the CLI and the
# Lua module; `make check` runs every test (plain, ASan+UBSan, TSan, fuzz);
# `make install` / `make uninstall` (PREFIX, DESTDIR); `make bench`;
# `make lint` (clang-tidy, cppcheck). docs/ARCHITECTURE.md has the picture.
CC      ?= cc
CLANG   ?= clang
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
LDLIBS  += -lpthread
B       := build

# The version, from the one place it is written (sframe/jitsframe.h).
ver = $(shell sed -n 's/^\#define JSF_VERSION_$(1) \([0-9]*\).*/\1/p' sframe/jitsframe.h)
VERSION := $(call ver,MAJOR).$(call ver,MINOR).$(call ver,PATCH)
SOMAJOR := $(call ver,MAJOR)

# --- the libraries, bottom first. Each directory is one static library
# with one header as its face; DIR_DEPS are the directories it may include
# (those below it: tests/t_layers.sh checks the include graph against
# this). The sframe/ library is libjitsframe, the installed one. ---
LIBDIRS := sframe perfmap lj audit unwind sampler profile
common_DEPS  :=
sframe_DEPS  :=
perfmap_DEPS := sframe
lj_DEPS      := sframe
audit_DEPS   := sframe lj common
unwind_DEPS  := sframe perfmap lj common
sampler_DEPS := sframe unwind common
profile_DEPS := common
vm_DEPS      := sframe perfmap lj audit common
cli_DEPS     := sframe perfmap audit unwind sampler profile common
# what each links (beyond its DEPS' own libraries)
unwind_LIBS  := -ldw -lelf -luring
sampler_LIBS := -lbpf -lelf -lz
profile_LIBS := -lprotobuf-c -lz
audit_LIBS   := -lmsgpackc -ldw -lelf
sframe_SRC  := $(wildcard sframe/*.c)
perfmap_SRC := $(wildcard perfmap/*.c)
lj_SRC      := $(wildcard lj/*.c)
audit_SRC   := $(wildcard audit/*.c)
unwind_SRC  := $(wildcard unwind/*.c)
sampler_SRC := $(filter-out %.bpf.c,$(wildcard sampler/*.c))
profile_SRC := $(wildcard profile/*.c) $(B)/gen/pprof.pb-c.c
vm_SRC      := $(wildcard vm/*.c)
cli_SRC     := $(wildcard cli/*.c)

LUAJIT_CFLAGS := $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
profile_CPPFLAGS := -I$(B)/gen
sampler_CPPFLAGS := -I$(B)/gen
vm_CPPFLAGS      := $(LUAJIT_CFLAGS)
# the tests may look inside every library (not into vm/ or cli/)
tests_CPPFLAGS   := $(addprefix -I,$(LIBDIRS) common) -I$(B)/gen
bench_CPPFLAGS   := $(tests_CPPFLAGS)
# -I flags of a source file, from its top directory
top = $(firstword $(subst /, ,$(1)))
dirflags = $(addprefix -I,$(call top,$(1)) $($(call top,$(1))_DEPS)) $($(call top,$(1))_CPPFLAGS)

# library file of directory $(2) in flavour $(1)
libfile = $(B)/$(1)/$(if $(filter sframe,$(2)),libjitsframe,libjsf_$(2)).a
# the libraries directory $(2) links (itself, if a library, and its DEPS,
# transitively: cli/ links audit/, which uses lj/), in link order (top
# first), and their system libraries
LINKORDER := profile sampler unwind audit lj perfmap sframe
deps_of = $(foreach d,$($(1)_DEPS),$(d) $(call deps_of,$(d)))
closure = $(foreach d,$(filter $(2) $(call deps_of,$(2)),$(LINKORDER)),$(call libfile,$(1),$(d)))
syslibs = $(foreach d,$(1) $($(1)_DEPS),$($(d)_LIBS))

.PHONY: all check check-build bench clean format deps demo install uninstall lint
all: $(B)/libjitsframe.a $(B)/libjitsframe.so $(B)/jitsframe $(B)/lua/jitsframe.so
all: $(B)/lua/jitsframe_replay.lua $(B)/libjitsframe.so.$(SOMAJOR)

# --- flavours: rel (the product; -fPIC for the shared objects; -fno-plt:
# calls into other objects go straight through the GOT, which the module's
# -z now fills at load, not through a PLT stub: one cold line fewer per
# call site after a compile, 0.01-0.05 us of a trace stop's 0.4-0.8), asan
# (ASan+UBSan), tsan, fuzz (clang, coverage for libFuzzer) ---
rel_CC      := $(CC)
rel_CFLAGS  := $(CFLAGS) -fPIC -fvisibility=hidden -fno-plt
asan_CC     := $(CC)
asan_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
tsan_CC     := $(CC)
tsan_CFLAGS := -O1 -g -fsanitize=thread
fuzz_CC     := $(CLANG)
fuzz_CFLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FLAVOURS    := rel asan tsan fuzz

# one object per source, with its dependency file (-MMD); an object whose
# dependency file is missing is rebuilt (it may predate one). The
# dependency files are named targets (not intermediate: never deleted).
ALL_SRC := $(foreach d,$(LIBDIRS) vm cli,$($(d)_SRC)) $(wildcard tests/*.c)
DEPFILES := $(foreach f,$(FLAVOURS),$(patsubst %.c,$(B)/$(f)/%.d,$(patsubst $(B)/gen/%.c,gen/%.c,$(ALL_SRC))))
$(DEPFILES):
-include $(wildcard $(DEPFILES))
define flavour
$(B)/$(1)/%.o: %.c $(B)/$(1)/%.d | $(B)/gen/pprof.pb-c.h
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$(WARN) -MMD -MP $$(call dirflags,$$<) $$($(1)_CFLAGS) -c $$< -o $$@
$(B)/$(1)/gen/%.o: $(B)/gen/%.c $(B)/$(1)/gen/%.d
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$(WARN) -MMD -MP -I$(B)/gen $$($(1)_CFLAGS) -c $$< -o $$@
$(foreach d,$(LIBDIRS),$(call libfile,$(1),$(d))): $(B)/$(1)/lib%.a:
	@rm -f $$@; ar rcs $$@ $$^
$(foreach d,$(LIBDIRS),$(eval $(call libfile,$(1),$(d)): $(patsubst %.c,$(B)/$(1)/%.o,$(patsubst $(B)/gen/%.c,gen/%.c,$($(d)_SRC)))))
endef
$(foreach f,$(FLAVOURS),$(eval $(call flavour,$(f))))

# --- the in-kernel sampler (sampler/, libbpf-bootstrap style): the BPF
# program compiled by clang against the running kernel's BTF (vmlinux.h
# from bpftool), embedded in a skeleton (bpftool gen skeleton) that the
# user side includes: nothing is read or downloaded at run time ---
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
$(B)/gen/vmlinux.h:
	@mkdir -p $(dir $@)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >$@.tmp && mv $@.tmp $@
$(B)/gen/sampler.bpf.o: sampler/sampler.bpf.c sampler/smp_abi.h $(B)/gen/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -I$(B)/gen -Isampler -c $< -o $@
$(B)/gen/sampler.skel.h: $(B)/gen/sampler.bpf.o
	{ echo '/* NOLINTBEGIN: generated by bpftool gen skeleton, not linted */'; \
	  bpftool gen skeleton $< name sampler_bpf && echo '/* NOLINTEND */'; } >$@.tmp && mv $@.tmp $@
$(foreach f,$(FLAVOURS),$(B)/$(f)/sampler/sampler.o): $(B)/gen/sampler.skel.h

# --- profiles: pprof through protobuf-c (C generated from
# profile/pprof.proto by protoc-c), gzip through zlib ---
$(B)/gen/pprof.pb-c.c: profile/pprof.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(B)/gen -Iprofile profile/pprof.proto
$(B)/gen/pprof.pb-c.h: $(B)/gen/pprof.pb-c.c

# --- libjitsframe, as installed: libjitsframe.so.VERSION (soname
# libjitsframe.so.MAJOR, symbols versioned by sframe/libjitsframe.map),
# the dev link libjitsframe.so, libjitsframe.a, jitsframe.pc ---
rel_sframe_OBJ := $(patsubst %.c,$(B)/rel/%.o,$(sframe_SRC))
$(B)/libjitsframe.a: $(B)/rel/libjitsframe.a
	cp $< $@
$(B)/libjitsframe.so.$(VERSION): $(rel_sframe_OBJ) sframe/libjitsframe.map
	$(CC) -shared -Wl,-soname,libjitsframe.so.$(SOMAJOR) \
		-Wl,--version-script=sframe/libjitsframe.map -Wl,-z,defs \
		-o $@ $(rel_sframe_OBJ) $(LDLIBS)
$(B)/libjitsframe.so.$(SOMAJOR) $(B)/libjitsframe.so: $(B)/libjitsframe.so.$(VERSION)
	ln -sf $(notdir $<) $@

# --- the CLI: commands only, on the libraries ---
define program
# $(1) flavour, $(2) output
$(2): $(patsubst %.c,$(B)/$(1)/%.o,$(cli_SRC)) $(call closure,$(1),cli)
	$$($(1)_CC) $$($(1)_CFLAGS) $$^ -o $$@ $(call syslibs,cli) $$(LDLIBS)
endef
$(eval $(call program,rel,$(B)/jitsframe))
# the CLI under ASan+UBSan (tests/t_report.sh feeds it damaged perf.data)
$(eval $(call program,asan,$(B)/asan/jitsframe))

# --- the LuaJIT module (vm/): no -lluajit, the VM exports the Lua C API;
# it exports luaopen_jitsframe alone (vm/jitsframe.map); -z now: symbols
# are bound at require, not on first use inside the first traces' events ---
module_link = $(CC) $(CFLAGS) -fPIC -shared -Wl,--version-script=vm/jitsframe.map \
	-Wl,-z,defs -Wl,--unresolved-symbols=ignore-in-object-files \
	-Wl,-z,now $(1) -o $@ -lgcc_s $(call syslibs,vm) $(LDLIBS)
$(B)/lua/jitsframe.so: $(patsubst %.c,$(B)/rel/%.o,$(vm_SRC)) $(call closure,rel,vm) vm/jitsframe.map
	@mkdir -p $(dir $@)
	$(call module_link,$(filter %.o %.a,$^))

# bench/vm_bench.lua's cut builds of the module (vm/vm.h VM_BENCH_CUT;
# never installed): the files that have cuts compiled again, cut short
VM_CUT_SRC := vm/traces.c vm/sinks.c vm/audit_raw.c
$(B)/bench/cut%/jitsframe.so: $(VM_CUT_SRC) $(patsubst %.c,$(B)/rel/%.o,$(filter-out $(VM_CUT_SRC),$(vm_SRC))) $(call closure,rel,vm) vm/jitsframe.map $(wildcard vm/*.h)
	@mkdir -p $(dir $@)
	for f in $(VM_CUT_SRC); do $(CC) $(WARN) -DVM_BENCH_CUT=$* \
		$(call dirflags,vm/x.c) $(rel_CFLAGS) -c $$f \
		-o $(dir $@)$$(basename $$f .c).o || exit 1; done
	$(call module_link,$(addprefix $(dir $@),$(notdir $(VM_CUT_SRC:.c=.o))) \
		$(filter %.o %.a,$(filter-out $(VM_CUT_SRC),$^)))

# `jitsframe audit replay` runs this driver (found beside the CLI, in lua/)
$(B)/lua/jitsframe_replay.lua: vm/replay.lua
	@mkdir -p $(dir $@)
	cp $< $@

# gdb's unwinder through trace frames (docs/VM.md "gdb"): `source
# build/gdb/jitsframe.py` finds build/libjitsframe.so.1 beside it
all: $(B)/gdb/jitsframe.py
$(B)/gdb/jitsframe.py: gdb/jitsframe.py
	@mkdir -p $(dir $@)
	cp $< $@

# --- the HTML flame graph's viewer (d3-flame-graph + d3, and the tests'
# pprof decoder pprof-format) installed from viewer/package-lock.json into
# build/viewer by npm ci. Without npm or without the registry the build
# goes on: the HTML writer then says the viewer is unavailable ---
all: $(B)/viewer/.installed
$(B)/viewer/.installed: viewer/package.json viewer/package-lock.json
	@rm -rf $(B)/viewer && mkdir -p $(B)/viewer
	@cp viewer/package.json viewer/package-lock.json $(B)/viewer/
	@if ! command -v npm >/dev/null; then \
		echo "make: npm missing (make deps): the HTML flame graph's viewer is not vendored;" \
		     "flamegraph.html will say so" >&2; \
	elif ! (cd $(B)/viewer && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then \
		echo "make: npm ci failed (no registry?): the HTML flame graph's viewer is not vendored;" \
		     "flamegraph.html will say so" >&2; \
	else touch $@; fi

# --- tests: each links the libraries it tests ---
TESTS   := t_rows t_ljrows t_region t_concurrency t_crash t_badinput t_libsframe t_cli
TESTS   += t_auditdec t_ljtrace t_profile t_api t_unwind t_find t_prune t_rjlog t_rjrows t_profsym
TESTS   += t_sampler t_sampler_procs t_sampler_storm t_names t_resident t_ksyms t_fullfs
TEST_DIR_t_sampler  := sampler
TEST_DIR_t_sampler_procs := sampler
TEST_DIR_t_sampler_storm := sampler
TEST_DIR_t_ljrows   := lj
TEST_DIR_t_ljtrace  := lj
TEST_DIR_t_auditdec := audit
TEST_DIR_t_rjlog    := audit
TEST_DIR_t_rjrows   := audit
TEST_DIR_t_profile  := profile
TEST_DIR_t_unwind   := unwind
TEST_DIR_t_profsym  := unwind
TEST_DIR_t_ksyms    := unwind
TEST_LIBS_t_libsframe := -lsframe
TEST_LIBS_t_api := -lsframe
TEST_LIBS_t_states := -lluajit-5.1
TEST_CPPFLAGS_t_states := $(LUAJIT_CFLAGS)
testdir = $(or $(TEST_DIR_$(1)),sframe)
define test
$(B)/$(1)/tests/$(2): $(B)/$(1)/tests/$(2).o $(call closure,$(1),$(call testdir,$(2)))
	$$($(1)_CC) $$($(1)_CFLAGS) $$^ -o $$@ $(call syslibs,$(call testdir,$(2))) $$(TEST_LIBS_$(2)) $$(LDLIBS)
endef
$(foreach f,rel asan tsan,$(foreach t,$(TESTS) t_states,$(eval $(call test,$(f),$(t)))))
$(B)/rel/tests/t_states.o: tests_CPPFLAGS += $(LUAJIT_CFLAGS)

# --- VM exactness tests (tests/t_vm.sh): the probe called from trace code
# through the FFI, and LD_PRELOAD shims (a faked interpreter FDE; mcode
# placement steered so that flushed trace addresses come back) ---
VMTEST_LIBS := $(B)/tests/libprobe.so $(B)/tests/libfakefde.so $(B)/tests/libmcreuse.so
$(B)/tests/libprobe.so: tests/probe.c $(B)/rel/libjitsframe.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(tests_CPPFLAGS) $(LUAJIT_CFLAGS) -O2 -g -fPIC -shared -fno-omit-frame-pointer \
		$^ -o $@ -ldl $(LDLIBS)
$(B)/tests/x86len_walk: $(B)/rel/tests/x86len_walk.o $(B)/rel/libjsf_lj.a
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@
$(B)/tests/elfrows_dump: $(B)/rel/tests/elfrows_dump.o $(call closure,rel,unwind)
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@ $(call syslibs,unwind) $(LDLIBS)
$(B)/tests/mkregion: $(B)/rel/tests/mkregion.o $(B)/rel/libjitsframe.a
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@ -lpthread
# tests/t_cfnames.sh's Lua C module: as built (nm's ground truth) and
# stripped (what the test loads); cmodfn.so is the same file
$(B)/tests/cmod-full/cmod.so: tests/cmod.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(LUAJIT_CFLAGS) -O2 -g -fPIC -shared -fvisibility=hidden $< -o $@
$(B)/tests/cmod/cmod.so: $(B)/tests/cmod-full/cmod.so
	@mkdir -p $(dir $@)
	strip --strip-unneeded -o $@ $<
	ln -sf cmod.so $(dir $@)cmodfn.so
$(B)/tests/lib%.so: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -O2 -g -fPIC -shared $< -o $@ -ldl

# --- fuzzing (clang libFuzzer, with ASan+UBSan); each fuzzer's corpus of
# found crashes and interesting inputs is kept in tests/corpus/NAME ---
FUZZERS := fuzz_view fuzz_sframe fuzz_perfdata fuzz_audit fuzz_rjlog fuzz_ksyms \
	    fuzz_rtnames fuzz_jitdump fuzz_folded fuzz_srcmap fuzz_vmpjson
FUZZ_DIR_fuzz_jitdump  := perfmap
FUZZ_DIR_fuzz_folded   := profile
FUZZ_DIR_fuzz_vmpjson  := profile
FUZZ_DIR_fuzz_perfdata := unwind
FUZZ_DIR_fuzz_ksyms    := unwind
FUZZ_DIR_fuzz_rtnames  := unwind
FUZZ_DIR_fuzz_audit    := audit
FUZZ_DIR_fuzz_rjlog    := audit
define fuzzer
$(B)/fuzz/$(1): $(B)/fuzz/tests/$(1).o $(call closure,fuzz,$(or $(FUZZ_DIR_$(1)),sframe))
	$(CLANG) -g -fsanitize=fuzzer,address,undefined $$^ -o $$@ $(call syslibs,$(or $(FUZZ_DIR_$(1)),sframe)) $$(LDLIBS)
endef
$(foreach z,$(FUZZERS),$(eval $(call fuzzer,$(z))))

deps:
	@scripts/install-deps

# check: the packages first, then everything the tests run, built on every
# core (a sub-make, so that -j never compiles before deps), then the tests
NPROC := $(shell nproc 2>/dev/null || echo 2)
check: deps
	@$(MAKE) --no-print-directory -j$(NPROC) check-build
	@TESTS="$(TESTS)" FUZZERS="$(FUZZERS)" scripts/run-tests
check-build: all $(addprefix $(B)/rel/tests/,$(TESTS)) \
       $(addprefix $(B)/asan/tests/,$(TESTS)) $(B)/tsan/tests/t_concurrency \
       $(B)/tsan/tests/t_profile \
       $(B)/rel/tests/t_states $(B)/asan/jitsframe \
       $(VMTEST_LIBS) $(B)/tests/x86len_walk $(B)/tests/elfrows_dump \
       $(B)/tests/mkregion $(B)/tests/cmod/cmod.so \
       $(addprefix $(B)/fuzz/,$(FUZZERS))

# The main job: profile a bundled LuaJIT workload through its traces.
DEMO_WORKLOAD ?= bench/workloads/numeric.lua
demo: deps all
	@rm -rf demo
	@build/jitsframe record -o demo -- luajit $(DEMO_WORKLOAD)
	@echo
	@echo "Flame graph: $(CURDIR)/demo/flamegraph.html (interactive; open it in a browser)"
	@echo "             $(CURDIR)/demo/flamegraph.svg, demo/profile.pb.gz (pprof)"
	@echo "perf's view: perf report -i demo/perf.data --sort sym,srcline"
	@echo "The rows:    build/jitsframe region dump demo/region --all"

bench: all
	@$(MAKE) --no-print-directory -C bench

# --- install: PREFIX (default /usr/local) and DESTDIR, as usual ---
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/jitsframe
LUA_CMOD   ?= $(LIBDIR)/lua/5.1
LUA_LMOD   ?= $(PREFIX)/share/lua/5.1
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(LUA_CMOD) $(DESTDIR)$(LUA_LMOD) $(DESTDIR)$(DATADIR)/gdb
	install -m 755 $(B)/jitsframe $(DESTDIR)$(BINDIR)/jitsframe
	install -m 644 sframe/jitsframe.h $(DESTDIR)$(INCLUDEDIR)/jitsframe.h
	install -m 644 $(B)/libjitsframe.a $(DESTDIR)$(LIBDIR)/libjitsframe.a
	install -m 755 $(B)/libjitsframe.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libjitsframe.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libjitsframe.so.$(SOMAJOR)
	ln -sf libjitsframe.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libjitsframe.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' sframe/jitsframe.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/jitsframe.pc
	install -m 755 $(B)/lua/jitsframe.so $(DESTDIR)$(LUA_CMOD)/jitsframe.so
	install -m 644 vm/replay.lua $(DESTDIR)$(LUA_LMOD)/jitsframe_replay.lua
	install -m 644 docs/jitsframe.1 $(DESTDIR)$(MANDIR)/man1/jitsframe.1
	install -m 644 docs/jitsframe.3 $(DESTDIR)$(MANDIR)/man3/jitsframe.3
	install -m 644 gdb/jitsframe.py $(DESTDIR)$(DATADIR)/gdb/jitsframe.py
	# the HTML writer looks for viewer/node_modules/... (profile/profile.c)
	if [ -e $(B)/viewer/.installed ]; then \
		install -d $(DESTDIR)$(DATADIR)/viewer && \
		rm -rf $(DESTDIR)$(DATADIR)/viewer/node_modules && \
		cp -r $(B)/viewer/node_modules $(DESTDIR)$(DATADIR)/viewer/; fi
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/jitsframe $(DESTDIR)$(INCLUDEDIR)/jitsframe.h \
		$(DESTDIR)$(LIBDIR)/libjitsframe.a $(DESTDIR)$(LIBDIR)/libjitsframe.so \
		$(DESTDIR)$(LIBDIR)/libjitsframe.so.$(SOMAJOR) \
		$(DESTDIR)$(LIBDIR)/libjitsframe.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/pkgconfig/jitsframe.pc \
		$(DESTDIR)$(LUA_CMOD)/jitsframe.so $(DESTDIR)$(LUA_LMOD)/jitsframe_replay.lua \
		$(DESTDIR)$(MANDIR)/man1/jitsframe.1 $(DESTDIR)$(MANDIR)/man3/jitsframe.3 \
		$(DESTDIR)$(DATADIR)/gdb/jitsframe.py
	rm -rf $(DESTDIR)$(DATADIR)

# --- make lint: clang-tidy (checks from .clang-tidy) and cppcheck over
# every source of the libraries and programs, each file with its own
# directory's flags; one stamp per file and tool (build/lint/DIR/x.tidy,
# .cppcheck, with a dependency file), so it runs in parallel and again only
# for what changed. Any finding fails it. cppcheck is not given -Ibuild/gen:
# it reads no system headers, so in the generated pprof.pb-c.h protobuf-c's
# PROTOBUF_C_VERSION_NUMBER is undefined and the version check hits its
# #error, and on an #error cppcheck drops the whole configuration: it would
# silently check nothing of profile/pprof.c. Not found, the header is
# skipped (cppcheck needs no declarations), and that code is protoc-c's ---
LINT_SRC := $(filter-out %.bpf.c,$(foreach d,$(LIBDIRS) vm cli,$(wildcard $(d)/*.c)))
CPPCHECK := cppcheck -q --std=c11 --enable=warning,portability --error-exitcode=1 \
	--inline-suppr -D_GNU_SOURCE -D__x86_64__
lint: $(patsubst %.c,$(B)/lint/%.tidy,$(LINT_SRC)) $(patsubst %.c,$(B)/lint/%.cppcheck,$(LINT_SRC))
$(B)/lint/%.tidy: %.c .clang-tidy | $(B)/gen/pprof.pb-c.h
	@mkdir -p $(dir $@)
	@$(CC) $(WARN) $(call dirflags,$<) -MM -MP -MT $@ -MF $@.d $<
	clang-tidy --quiet $< -- $(WARN) $(call dirflags,$<)
	@touch $@
$(B)/lint/%.cppcheck: %.c | $(B)/gen/pprof.pb-c.h
	@mkdir -p $(dir $@)
	@$(CC) $(WARN) $(call dirflags,$<) -MM -MP -MT $@ -MF $@.d $<
	$(CPPCHECK) $(filter-out -I$(B)/gen,$(filter -I% -D%,$(call dirflags,$<))) $<
	@touch $@

# the sampler's sources include the generated skeleton
$(patsubst %.c,$(B)/lint/%.tidy,$(sampler_SRC)) $(patsubst %.c,$(B)/lint/%.cppcheck,$(sampler_SRC)): | $(B)/gen/sampler.skel.h

SRC_DIRS := sframe perfmap lj audit unwind sampler profile vm cli common
format:
	clang-format -i $(wildcard $(addsuffix /*.[ch],$(SRC_DIRS))) tests/*.[ch] bench/*.c

clean:
	rm -rf $(B)
