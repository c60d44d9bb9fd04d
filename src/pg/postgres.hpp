// The one place that includes Postgres' headers, inside extern "C", postgres.h first.
// Include it after every standard and core header: Postgres' port.h renames printf,
// snprintf and friends with macros that break C++'s standard headers.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"
#include "utils/varlena.h"
}

// MyProc's local transaction id moved into a struct in PostgreSQL 17.
#if PG_VERSION_NUM >= 170000
#define BATON_MY_LXID (MyProc->vxid.lxid)
#else
#define BATON_MY_LXID (MyProc->lxid)
#endif

// stringToQualifiedNameList gained a soft-error argument in PostgreSQL 16.
#if PG_VERSION_NUM >= 160000
#define BATON_QUALIFIED_NAME_LIST(s) stringToQualifiedNameList((s), nullptr)
#else
#define BATON_QUALIFIED_NAME_LIST(s) stringToQualifiedNameList(s)
#endif
