/* Compiles lwIP's unmodified core/def.c with our lwipopts.h. */
#include "core/def.c"
