# PGXS build of pg_baton. `make && make install`, then `make installcheck`
# against a running server (test/run-all.sh starts a throwaway one).
# Another server, out of tree (objects and test outputs in a folder of their own):
#   make -C build-pg/18 -f $PWD/Makefile PG_CONFIG=/path/to/18/bin/pg_config install
EXTENSION   = pg_baton
MODULE_big  = pg_baton
DATA        = pg_baton--0.1.0.sql pg_baton--0.2.0.sql pg_baton--0.3.0.sql \
              pg_baton--0.1.0--0.2.0.sql pg_baton--0.2.0--0.3.0.sql \
              pg_baton--0.3.0--0.4.0.sql pg_baton--0.4.0--0.5.0.sql \
              pg_baton--0.5.0--0.6.0.sql pg_baton--0.6.0--0.7.0.sql \
              pg_baton--0.7.0--0.8.0.sql pg_baton--0.8.0--0.9.0.sql \
              pg_baton--0.9.0--0.10.0.sql pg_baton--0.10.0--0.11.0.sql \
              pg_baton--0.11.0--0.12.0.sql pg_baton--0.12.0--0.13.0.sql \
              pg_baton--0.13.0--0.14.0.sql pg_baton--0.14.0--0.15.0.sql

# The sources, found beside this Makefile (through VPATH when it is run from elsewhere).
ROOT_DIR := $(patsubst %/,%,$(dir $(abspath $(firstword $(MAKEFILE_LIST)))))
SRCS = $(sort $(wildcard $(addprefix $(ROOT_DIR)/,src/*.cpp src/core/*.cpp src/pg/*/*.cpp src/api/*.cpp)))
OBJS = $(patsubst $(ROOT_DIR)/%.cpp,%.o,$(SRCS))
ifneq ($(ROOT_DIR),$(CURDIR))
# PGXS takes its srcdir from VPATH; once it is read, VPATH gives way to vpath for the
# sources alone (below), so that an in-tree build's objects are never taken for this one's.
VPATH = $(ROOT_DIR)
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

# The version the library serves (pg/runtime/schema_version.hpp): the control file's.
BATON_VERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" $(ROOT_DIR)/pg_baton.control)
PG_CPPFLAGS = -isystem $(includedir_server) -I$(srcdir)/src -DBATON_VERSION='"$(BATON_VERSION)"'
PG_CXXFLAGS = -std=c++17 -Wextra -Wpedantic -Wno-unused-parameter $(if $(WERROR),-Werror)
# libpq: the wake-up relay's connections to the other nodes (pg/workers/relay).
PG_CPPFLAGS += -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL += $(libpq)
SHLIB_LINK += -lstdc++

# pg_regress: sql/NAME.sql against expected/NAME.out, in this order.
REGRESS      = setup tenants deliveries delivery_errors authorization boundary workflows workflow_errors markers
# claim, finish and finish_batch with direct access and through the SPI fallback.
REGRESS     += direct_access executor_duties leases ready
REGRESS     += hostile_arguments hostile_json security
# Operations: the views for monitoring, then retention (recreates the extension).
REGRESS     += monitoring retention
# Every refusal of every function names its object (after retention: its own run ids).
REGRESS     += messages cancel
# The fair claim across tenants, weights and pauses (0.13.0).
REGRESS     += fairness key_limits aging
# Recurring schedules (0.8.0): schedule, unschedule, fire_schedules, the view.
REGRESS     += schedules
# The deliveries' counters (0.15.0).
REGRESS     += counters
# Write functions refused in read-only transactions (25006), reads answering.
REGRESS     += read_only
# A direct write to a tenant that is not active, refused on every table of schema baton
# (found in the catalog).
REGRESS     += fence_tables
# The per-backend caches past their caps (a thousand tenants; before health, which
# recreates the extension).
REGRESS     += caches
# baton.health (0.8.0; recreates the extension).
REGRESS     += health
# enqueue_batch's set-based insert against a call per item (ten thousand ids).
REGRESS     += enqueue_batch
# A decide function found by its signature, created again in another shape (0.11.0; adds
# runs, so last).
REGRESS     += decide_signature
# A schema older than the library refused, then updated (recreates the extension).
REGRESS     += schema_version
REGRESS_OPTS = --inputdir=$(srcdir)
# Isolation specs: test/isolation/specs/NAME.spec against test/isolation/expected/NAME.out.
ISOLATION      = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --outputdir=output_iso

# Debian's PGXS would also compile every .cpp to LLVM bitcode with its own flags.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

EXTRA_CLEAN = output_iso results regression.diffs regression.out

ifneq ($(ROOT_DIR),$(CURDIR))
srcdir := $(ROOT_DIR)
VPATH :=
vpath %.cpp $(ROOT_DIR)
vpath %.hpp $(ROOT_DIR)
vpath %.control $(ROOT_DIR)
vpath %.sql $(ROOT_DIR)
endif

# PGXS tracks no header dependencies: rebuild every object when any header changes.
$(OBJS): $(wildcard $(ROOT_DIR)/src/*/*.hpp $(ROOT_DIR)/src/pg/*/*.hpp)
src/pg/runtime/schema_version.o: $(ROOT_DIR)/pg_baton.control
