/* model_backend.c - which backend a model runs on (andrea_model_set_backend). */
#include "backend/backend.h"
#include "model/model.h"
#include "util/error.h"

int andrea_model_set_backend(andrea_model *m, const char *name) {
    const andrea_backend *be = andrea_backend_find(name);
    if (!be) return -1;
    /* the CPU variants share host memory; moving a model's tensors between memory spaces
     * (a device backend) is not built yet */
    if (be->ops.alloc != m->be->ops.alloc)
        return andrea_set_error("backend '%s' keeps its tensors in other memory than '%s': "
                                "create or load the model on it", be->name, m->be->name);
    m->be = be;
    return 0;
}

const andrea_backend *andrea_model_backend(const andrea_model *m) { return m->be; }
