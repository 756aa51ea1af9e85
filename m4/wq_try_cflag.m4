# WQ_TRY_CFLAG(FLAG, [ACTION-IF-OK], [ACTION-IF-NOT])
# Check whether the C compiler accepts FLAG (with -Werror, so warnings count).
AC_DEFUN([WQ_TRY_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  wq_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2], [AC_MSG_RESULT([no]); $3])
  CFLAGS=$wq_save_CFLAGS
])
