# gg_keep_ptxas_reports(<target>): the target's CUDA objects are compiled
# with ptxas's resource report (--resource-usage), which
# keep_ptxas_report.sh keeps beside each object for scripts/check_ptxas.py:
# no kernel may spill registers or serialize its wgmmas unless that check's
# allow-list says why. The launcher goes in front of any launcher already
# set (ccache).
function(gg_keep_ptxas_reports target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--resource-usage>)
  get_target_property(launcher ${target} CUDA_COMPILER_LAUNCHER)
  if(NOT launcher)
    set(launcher "")
  endif()
  set_target_properties(${target} PROPERTIES CUDA_COMPILER_LAUNCHER
    "sh;${PROJECT_SOURCE_DIR}/cmake/keep_ptxas_report.sh;${launcher}")
endfunction()
