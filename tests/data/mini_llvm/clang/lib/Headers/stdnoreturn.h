/*===---- stdnoreturn.h - Standard header for noreturn macro ---------------===
 *
 * The C11 header, as clang's resource directory has it (the one header of this
 * stand-in's clang-resource-headers).
 *
 *===-----------------------------------------------------------------------===
 */

#ifndef __STDNORETURN_H
#define __STDNORETURN_H

#define noreturn _Noreturn
#define __noreturn_is_defined 1

#endif /* __STDNORETURN_H */
