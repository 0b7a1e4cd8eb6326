"""Traffic generators and what they report: iperf3 today, UDP and disk sweeps later."""
