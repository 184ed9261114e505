// What a verify batch of n tokens costs a model on this machine, at a stated depth: the cost curve that
// `tandem bench --costs FILE` projects with (scripts/gpu-costs/README.md).
//
// The context holds `depth` tokens; then, for n = 1..max_n, a batch of n tokens is decoded with logits for
// every row (as speculative verification needs them), every row's argmax is read, and the cache is rolled
// back to the depth. Timed from the decode call until the last row is read; the median of `reps` runs after
// warm-up runs. llama.cpp's own choices stand (CUDA graphs where it uses them, flash attention as `auto`).
//
// With --last-row, only the last row's logits are computed and read: a draft model's catch-up after accepted
// tokens (its T(1) is the same either way).
//
// usage: tandem-costs MODEL [--depth 500] [--max-n 17] [--reps 20] [--ngl 999] [--threads N] [--last-row]
// prints one JSON object on stdout: {"model", "depth", "reps", "system", "batch_s": {"1": seconds, ...}}
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int arg_int(int argc, char ** argv, const char * name, int def) {
    for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], name)) return atoi(argv[i + 1]);
    return def;
}

static bool decode(llama_context * ctx, const std::vector<llama_token> & toks, int pos0, bool all_logits) {
    llama_batch b = llama_batch_init((int) toks.size(), 0, 1);
    for (size_t i = 0; i < toks.size(); i++) {
        b.token[i] = toks[i];
        b.pos[i] = pos0 + (int) i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = all_logits || i + 1 == toks.size();
    }
    b.n_tokens = (int) toks.size();
    int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc == 0;
}

static int argmax(const float * row, int n) {
    return (int) (std::max_element(row, row + n) - row);
}

int main(int argc, char ** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: %s MODEL [--depth 500] [--max-n 17] [--reps 20] [--ngl 999] [--threads N] "
                "[--last-row]\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int depth = arg_int(argc, argv, "--depth", 500);
    const int max_n = arg_int(argc, argv, "--max-n", 17);
    const int reps = arg_int(argc, argv, "--reps", 20);
    const int ngl = arg_int(argc, argv, "--ngl", 999);
    const int threads = arg_int(argc, argv, "--threads", (int) std::max(1u, std::thread::hardware_concurrency()));
    bool last_row = false;
    for (int i = 2; i < argc; i++) if (!strcmp(argv[i], "--last-row")) last_row = true;
    if (depth < 1 || max_n < 1 || reps < 1) {
        fprintf(stderr, "--depth, --max-n and --reps must be at least 1\n");
        return 2;
    }

    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    llama_model * model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", path);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = depth + max_n + 64;
    cp.n_batch = std::max(depth, max_n);
    cp.n_ubatch = std::min<uint32_t>(cp.n_batch, 512);
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context for %s\n", path);
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_memory_t mem = llama_get_memory(ctx);

    // ordinary tokens, the same every run (speed does not depend on which)
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> pick(200, std::min(n_vocab - 1, 50000));
    std::vector<llama_token> base(depth);
    for (auto & t : base) t = pick(rng);
    if (!decode(ctx, base, 0, false)) {
        fprintf(stderr, "decoding the %d-token context failed\n", depth);
        return 1;
    }
    llama_synchronize(ctx);

    printf("{\"model\": \"%s\", \"depth\": %d, \"reps\": %d, \"threads\": %d, \"rows\": \"%s\", \"system\": \"%s\", "
           "\"batch_s\": {", path, depth, reps, threads, last_row ? "last" : "every", llama_print_system_info());
    for (int n = 1; n <= max_n; n++) {
        std::vector<llama_token> toks(n);
        std::vector<double> samples;
        const int warm = 3;
        for (int r = 0; r < warm + reps; r++) {
            for (auto & t : toks) t = pick(rng);
            auto t0 = std::chrono::steady_clock::now();
            if (!decode(ctx, toks, depth, !last_row)) {
                fprintf(stderr, "decoding a batch of %d failed\n", n);
                return 1;
            }
            llama_synchronize(ctx);
            volatile int sink = 0;
            if (last_row) sink += argmax(llama_get_logits_ith(ctx, -1), n_vocab);
            else for (int i = 0; i < n; i++) sink += argmax(llama_get_logits_ith(ctx, i), n_vocab);
            auto t1 = std::chrono::steady_clock::now();
            llama_memory_seq_rm(mem, 0, depth, -1);
            if (r >= warm) samples.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        std::sort(samples.begin(), samples.end());
        printf("%s\"%d\": %.7f", n > 1 ? ", " : "", n, samples[samples.size() / 2]);
        fflush(stdout);
    }
    printf("}}\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
