#include "abft.h"

#include "abft/abft_engine.h"

/* The dispatch's entry to the host ABFT engine (src/abft/). */
int blasft_abft_host_gemm(const blasft_gemm *g, const blasft_config *cfg)
{
    return blasft_abft_run(g, cfg, NULL, 0);
}
