/* State shared by all generated forwarders (see forward.h). */
#include "forward.h"

_Thread_local int blasft_shim_depth;
