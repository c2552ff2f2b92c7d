"""Importers and exporters: nccl-tests logs, Chakra traces, NCCL topology XML and nvidia-smi text in;
Perfetto traces and Parquet out; atomic writes. (The scenario schema is :mod:`commwall.scenario`.)"""
