/* model_backend.c - which backend a model runs on (andrea_model_set_backend). */
#include "backend/backend.h"
#include "model/model.h"

int andrea_model_set_backend(andrea_model *m, const char *name) {
    const andrea_backend *be = andrea_backend_find(name);
    if (!be) return -1;
    m->be = be;
    return 0;
}

const andrea_backend *andrea_model_backend(const andrea_model *m) { return m->be; }
