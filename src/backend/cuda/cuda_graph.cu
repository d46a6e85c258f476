/*
 * cuda_graph.cu - the "cuda" backends' graphs (backend.h's andrea_backend_graph_ops): a
 * thread's ops captured into a CUDA graph and replayed whole, so that a small model's
 * training step costs one launch from the host instead of a few hundred.
 *
 * The capture runs on a stream of the capturing thread, created blocking (not
 * cudaStreamNonBlocking), so that a replay there is ordered with the legacy default stream
 * every eager op uses: the legacy stream waits for it, and it for the legacy stream. While a
 * thread captures, cuda_stream() is that stream (every launch, copy and product of the ops
 * goes to it), in cudaStreamCaptureModeThreadLocal: other threads' calls are theirs. An op's
 * host-visible result (the loss) goes to a result slot of the graph (cuda_capture_result),
 * read after each replay. A graph holds the addresses it captured, so scratch buffers that
 * grow while graphs live are kept (cuda_scratch_keep), and a graph is replayed only by the
 * thread that captured it (the scratch it uses is that thread's). Never yet run on a GPU.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"

enum { MAX_RESULTS = 64 };

struct andrea_backend_graph {
    cudaGraphExec_t exec;
    double *results; /* MAX_RESULTS device doubles: the captured ops' results */
    int n_results;
    pthread_t owner;
};

static __thread cudaStream_t capture_stream; /* this thread's, made at its first capture */
static __thread andrea_backend_graph *capturing; /* the graph being captured */
/* Set once a capture has failed with the device itself fine (an op CUDA refuses to
 * capture, a scratch that would grow): graphs are off for the process from then on, and
 * their callers run the ops one by one (graph_step.c, graph_decode.c), so that a capture
 * problem costs speed, not the run. */
static char graphs_off_why[512];
static volatile int graphs_off;

extern "C" const char *andrea_cuda_graphs_off(void) { return graphs_off ? graphs_off_why : NULL; }

double *cuda_capture_result(int n, const char *op) {
    andrea_backend_graph *g = capturing;
    if (!g || g->n_results + n > MAX_RESULTS) {
        cuda_failf(op, g ? "too many results in one graph" : "not capturing", "%d of %d", n,
                   (int)MAX_RESULTS);
        return NULL;
    }
    g->n_results += n;
    return g->results + g->n_results - n;
}

static int graph_begin(be_t be) {
    (void)be;
    const char *op = "graph begin";
    if (!cuda_ok()) return -1;
    if (graphs_off) return andrea_set_error("cuda graphs are off: %s", graphs_off_why);
    if (capturing) return cuda_failf(op, "a capture is already under way", "%s", "this thread");
    andrea_backend_graph *g = (andrea_backend_graph *)calloc(1, sizeof *g);
    if (!g) return cuda_failf(op, "out of host memory", "%s", "graph");
    cudaError_t e = cudaMalloc(&g->results, sizeof(double) * MAX_RESULTS);
    if (e == cudaSuccess && !capture_stream) e = cudaStreamCreate(&capture_stream);
    if (e == cudaSuccess)
        e = cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        cudaFree(g->results);
        free(g);
        return cuda_failf(op, cudaGetErrorString(e), "%s", "results, stream, capture");
    }
    g->owner = pthread_self();
    capturing = g;
    cuda_stream_now = capture_stream;
    return 0;
}

static void graph_free(andrea_backend_graph *g) {
    if (g->exec) cudaGraphExecDestroy(g->exec);
    cudaFree(g->results);
    free(g);
}

/* After a failed capture: when the failure is this capture's (recorded while it ran) and
 * the device answers, the backend's failure is undone and graphs are turned off; a failure
 * of the device itself (a sticky error) stays. Either way the message stays the error. */
static void turn_graphs_off(int ours) {
    cuda_state *s = &andrea_cuda_state;
    if (!s->failed || !ours) return;
    cudaGetLastError(); /* a refused capture's error is not sticky */
    if (cudaDeviceSynchronize() != cudaSuccess) return;
    snprintf(graphs_off_why, sizeof graphs_off_why, "%s", s->err);
    graphs_off = 1;
    andrea_set_error("%s (cuda graphs are off from now on)", s->err);
    s->failed = 0;
}

static andrea_backend_graph *graph_end(be_t be) {
    (void)be;
    const char *op = "graph end";
    andrea_backend_graph *g = capturing;
    if (!g) {
        cuda_failf(op, "no capture under way", "%s", "this thread");
        return NULL;
    }
    /* begin found no failure: one now is this capture's, or another thread's op's */
    int ours = !andrea_cuda_state.failed || andrea_cuda_state.failed_capturing;
    capturing = NULL;
    cuda_stream_now = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(capture_stream, &graph);
    /* an op that failed while captured has left the backend failed: no graph of it */
    if (e == cudaSuccess && andrea_cuda_state.failed) e = cudaErrorStreamCaptureInvalidated;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cuda_failf(op, cudaGetErrorString(e), "%d results", g->n_results);
        graph_free(g);
        turn_graphs_off(ours);
        return NULL;
    }
    cuda_scratch_keep(1);
    return g;
}

static int graph_launch(be_t be, andrea_backend_graph *g) {
    (void)be;
    const char *op = "graph launch";
    if (!cuda_ok()) return -1;
    if (!pthread_equal(g->owner, pthread_self()))
        return cuda_failf(op, "replayed by another thread than the one that captured it",
                          "%d results", g->n_results);
    CU_CHECK_R(-1, cudaGraphLaunch(g->exec, capture_stream), op, "%d results", g->n_results);
    return 0;
}

static int graph_results(be_t be, andrea_backend_graph *g, double *out, int cap) {
    (void)be;
    if (!cuda_ok()) return -1;
    int n = g->n_results < cap ? g->n_results : cap;
    /* on the legacy stream: after the replay, which ran on a blocking stream */
    CU_CHECK_R(-1, cudaMemcpy(out, g->results, sizeof(double) * n, cudaMemcpyDeviceToHost),
               "graph results", "%d of %d", n, g->n_results);
    return n;
}

static void graph_destroy(be_t be, andrea_backend_graph *g) {
    (void)be;
    if (!g) return;
    graph_free(g);
    cuda_scratch_keep(0);
}

static void *graph_host_alloc(be_t be, size_t bytes) {
    (void)be;
    void *p = NULL;
    if (!cuda_ok()) return NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* out of pinned memory is not sticky */
        andrea_set_error("cuda pinned host alloc (%zu bytes): %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void graph_host_free(be_t be, void *p) {
    (void)be;
    if (p) cudaFreeHost(p);
}

const andrea_backend_graph_ops cuda_graph_ops = {
    graph_begin,   graph_end,     graph_launch,     graph_results,
    graph_destroy, graph_host_alloc, graph_host_free,
};
