# jitsframe — top-level build. `make` builds the library and the CLI,
# `make check` runs every test (plain, ASan+UBSan, TSan, fuzz), `make bench`.
CC      ?= cc
CLANG   ?= clang
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
CPPFLAGS += -Isframe -Ivm
LDLIBS  += -lpthread
B       := build

LIB_SRC := sframe/sfenc.c sframe/region.c sframe/snap.c sframe/view.c \
           sframe/validate.c sframe/export.c
CLI_SRC := cli/main.c cli/region_cmd.c cli/run_cmd.c cli/record_cmd.c \
           cli/folded.c cli/flame.c perfmap/jdread.c
# jitsframe report (issue 6): perf.data reader, unwinder, symbols (the
# profile writers, cli/profile.c, are added below)
REPORT_SRC := cli/perfdata.c cli/unwind.c cli/elfcfi.c cli/symbolize.c \
           cli/elfsframe.c cli/ksyms.c cli/report_cmd.c
CLI_SRC += $(REPORT_SRC)
CLI_LIBS := -ldw -lelf
# the auditlog (issue 5): listing/dump and the reader shared with the module
CLI_SRC += cli/audit_replay.c
CLI_SRC += cli/audit_cmd.c vm/auditfmt.c vm/auditfunc.c
TESTS   := t_rows t_ljrows t_region t_concurrency t_crash t_badinput t_libsframe t_cli
TESTS   += t_auditdec t_ljtrace
HDRS    := $(wildcard sframe/*.h cli/*.h tests/*.h vm/*.h)

.PHONY: all check bench clean format deps demo
all: $(B)/libjitsframe.a $(B)/libjitsframe.so $(B)/jitsframe $(B)/lua/jitsframe.so
all: $(B)/lua/jitsframe_replay.lua

# --- one object set per flavour: build/<flavour>/... ---
define flavour
$(1)_OBJ := $$(patsubst %.c,$(B)/$(1)/%.o,$$(LIB_SRC))
$(B)/$(1)/%.o: %.c $$(HDRS)
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$(WARN) $$(CPPFLAGS) $$($(1)_CFLAGS) -c $$< -o $$@
$(B)/$(1)/libjitsframe.a: $$($(1)_OBJ)
	@rm -f $$@; ar rcs $$@ $$^
$(B)/$(1)/tests/%: tests/%.c tests/harness.h $(B)/$(1)/libjitsframe.a
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$(WARN) $$(CPPFLAGS) $$($(1)_CFLAGS) $$< $$(TEST_SRCS_$$*) $(B)/$(1)/libjitsframe.a -o $$@ $$(LDLIBS) $$(TEST_LIBS_$$*)
endef
rel_CC     := $(CC)
rel_CFLAGS := $(CFLAGS) -fPIC -fvisibility=default
asan_CC     := $(CC)
asan_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
tsan_CC     := $(CC)
tsan_CFLAGS := -O1 -g -fsanitize=thread
$(eval $(call flavour,rel))
$(eval $(call flavour,asan))
$(eval $(call flavour,tsan))

TEST_LIBS_t_libsframe := -lsframe
TEST_SRCS_t_ljrows := vm/ljrows.c vm/x86len.c
TEST_SRCS_t_ljtrace := vm/ljtrace.c
TEST_LIBS_t_states := -lluajit-5.1
TEST_LIBS_t_auditdec := -Ivm vm/auditfmt.c vm/auditw.c vm/auditfunc.c -lmsgpackc
AUDIT_FILES := vm/auditfmt.c vm/auditfmt.h vm/auditw.c vm/auditw.h vm/auditfunc.c vm/auditfunc.h
$(B)/rel/tests/t_auditdec $(B)/asan/tests/t_auditdec $(B)/fuzz/fuzz_audit $(B)/jitsframe: $(AUDIT_FILES)
CPPFLAGS += $(LUAJIT_CFLAGS)

$(B)/libjitsframe.a: $(B)/rel/libjitsframe.a
	cp $< $@
$(B)/libjitsframe.so: $(rel_OBJ)
	$(CC) -shared -Wl,-soname,libjitsframe.so.1 -o $@ $^ $(LDLIBS)
$(B)/jitsframe: $(CLI_SRC) $(HDRS) $(wildcard perfmap/*.h) $(B)/rel/libjitsframe.a
	$(CC) $(WARN) $(CPPFLAGS) -Iperfmap -Ivm $(CFLAGS) $(CLI_SRC) $(B)/rel/libjitsframe.a -o $@ $(CLI_LIBS) $(LDLIBS) $(AUDIT_LIBS)

# --- profiles (cli/profile.c): pprof through protobuf-c (C generated from
# cli/pprof.proto by protoc-c), gzip through zlib; the HTML flame graph's
# viewer (d3-flame-graph + d3, and the tests' pprof decoder pprof-format)
# installed from viewer/package-lock.json into build/viewer by npm ci ---
PROFILE_SRC := cli/profile.c cli/folded.c cli/flame.c $(B)/gen/pprof.pb-c.c
PROFILE_LIBS := -lprotobuf-c -lz
CLI_SRC += $(filter-out $(CLI_SRC),cli/profile.c) $(B)/gen/pprof.pb-c.c
$(B)/jitsframe: CPPFLAGS += -I$(B)/gen
$(B)/jitsframe: LDLIBS += $(PROFILE_LIBS)
$(B)/jitsframe: $(B)/gen/pprof.pb-c.c cli/profile.c
$(B)/gen/pprof.pb-c.c: cli/pprof.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(B)/gen -Icli cli/pprof.proto
$(B)/gen/pprof.pb-c.h: $(B)/gen/pprof.pb-c.c
TESTS += t_profile
TEST_LIBS_t_profile := $(PROFILE_SRC) $(PROFILE_LIBS)
$(B)/rel/tests/t_profile $(B)/asan/tests/t_profile: CPPFLAGS += -I$(B)/gen -Icli
$(B)/rel/tests/t_profile $(B)/asan/tests/t_profile: $(PROFILE_SRC) cli/pprof.proto
all: $(B)/viewer/.installed
$(B)/viewer/.installed: viewer/package.json viewer/package-lock.json
	@command -v npm >/dev/null || { echo "npm missing: make deps" >&2; exit 1; }
	@rm -rf $(B)/viewer && mkdir -p $(B)/viewer
	cp viewer/package.json viewer/package-lock.json $(B)/viewer/
	cd $(B)/viewer && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# the CLI under ASan+UBSan (tests/t_report.sh feeds it damaged perf.data)
$(B)/asan/jitsframe: $(CLI_SRC) $(HDRS) $(wildcard perfmap/*.h) $(B)/asan/libjitsframe.a
	$(CC) $(WARN) $(CPPFLAGS) -Iperfmap -Ivm $(asan_CFLAGS) $(CLI_SRC) $(B)/asan/libjitsframe.a -o $@ $(CLI_LIBS) $(LDLIBS) $(AUDIT_LIBS)
$(B)/asan/jitsframe: CPPFLAGS += -I$(B)/gen
$(B)/asan/jitsframe: LDLIBS += $(PROFILE_LIBS)
$(B)/asan/jitsframe: $(B)/gen/pprof.pb-c.c cli/profile.c

# --- the LuaJIT module (vm/): no -lluajit, the VM exports the Lua C API ---
LUAJIT_CFLAGS := $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
VM_SRC := vm/module.c vm/ljrows.c vm/x86len.c vm/vmcheck.c perfmap/jitdump.c perfmap/ehframe.c
VM_SRC += vm/audit.c vm/auditw.c vm/auditfmt.c vm/auditfunc.c vm/ljtrace.c
AUDIT_LIBS := -lmsgpackc
$(B)/lua/jitsframe.so: $(VM_SRC) $(HDRS) $(wildcard vm/*.h perfmap/*.h) $(rel_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) -Ivm -Iperfmap $(LUAJIT_CFLAGS) $(CFLAGS) -fPIC -shared \
		-fvisibility=hidden -Wl,-z,defs -Wl,--unresolved-symbols=ignore-in-object-files \
		$(VM_SRC) $(rel_OBJ) -o $@ -lgcc_s $(LDLIBS) $(AUDIT_LIBS)

# `jitsframe audit replay` runs this driver (found beside the CLI, in lua/)
$(B)/lua/jitsframe_replay.lua: vm/replay.lua
	@mkdir -p $(dir $@)
	cp $< $@

# --- VM exactness tests (tests/t_vm.sh): the probe called from trace code
# through the FFI, and LD_PRELOAD shims (a faked interpreter FDE; mcode
# placement steered so that flushed trace addresses come back) ---
VMTEST_LIBS := $(B)/tests/libprobe.so $(B)/tests/libfakefde.so $(B)/tests/libmcreuse.so
$(B)/tests/libprobe.so: tests/probe.c $(HDRS) $(rel_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) -O2 -g -fPIC -shared -fno-omit-frame-pointer \
		tests/probe.c $(rel_OBJ) -o $@ -ldl $(LDLIBS)
$(B)/tests/x86len_walk: tests/x86len_walk.c vm/x86len.c vm/x86len.h
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Ivm -O1 -g $< vm/x86len.c -o $@
$(B)/tests/lib%.so: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -O2 -g -fPIC -shared $< -o $@ -ldl

# --- fuzzing (clang libFuzzer, with ASan+UBSan) ---
FUZZERS := fuzz_view fuzz_sframe fuzz_perfdata
FUZZERS += fuzz_audit
FUZZ_EXTRA_fuzz_audit := -Ivm vm/auditfmt.c vm/auditfunc.c -lmsgpackc
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(B)/fuzz/%: tests/%.c $(LIB_SRC) $(HDRS)
	@mkdir -p $(dir $@)
	$(CLANG) $(WARN) $(CPPFLAGS) $(FUZZ_CFLAGS) $< $(LIB_SRC) -o $@ $(LDLIBS) $(FUZZ_EXTRA_$*)

# the perf.data reader and the unwinder (cli/): their own sources and libdw
PD_FUZZ_SRC := cli/perfdata.c cli/unwind.c cli/elfcfi.c cli/symbolize.c \
	cli/elfsframe.c perfmap/jdread.c
$(B)/fuzz/fuzz_perfdata: tests/fuzz_perfdata.c $(PD_FUZZ_SRC) $(LIB_SRC) $(HDRS)
	@mkdir -p $(dir $@)
	$(CLANG) $(WARN) $(CPPFLAGS) -Icli -Iperfmap $(FUZZ_CFLAGS) $< $(PD_FUZZ_SRC) $(LIB_SRC) -o $@ -ldw -lelf $(LDLIBS)

deps:
	@scripts/install-deps

check: deps all $(addprefix $(B)/rel/tests/,$(TESTS)) \
       $(addprefix $(B)/asan/tests/,$(TESTS)) $(B)/tsan/tests/t_concurrency \
       $(B)/rel/tests/t_states $(B)/asan/jitsframe \
       $(VMTEST_LIBS) $(B)/tests/x86len_walk \
       $(addprefix $(B)/fuzz/,$(FUZZERS))
	@TESTS="$(TESTS)" FUZZERS="$(FUZZERS)" scripts/run-tests

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

format:
	clang-format -i sframe/*.[ch] cli/*.[ch] vm/*.[ch] perfmap/*.[ch] \
		tests/*.[ch] bench/*.c

clean:
	rm -rf $(B)
