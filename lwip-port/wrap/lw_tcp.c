/* Compiles lwIP's unmodified core/tcp.c with our lwipopts.h. */
#include "core/tcp.c"
