/* wb_protos.c - the protocols workq-bench speaks, by --protocol (enum
 * wb_proto_id): the one place that names their tables.  wb_opts.c finds
 * --protocol's word here, main puts the entry in bench.proto. */
#include "wb.h"
#include "wb_proto.h"

const struct wb_proto *const wb_protos[WB_PROTO_COUNT] = {
    [WB_PROTO_WORKQ] = &wb_proto_workq,
    [WB_PROTO_BEANSTALKD] = &wb_proto_beanstalkd,
    [WB_PROTO_FAKTORY] = &wb_proto_faktory,
    [WB_PROTO_HERO] = &wb_proto_hero,
};
