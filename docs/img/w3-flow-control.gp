set terminal pngcairo size 1100,560 font "DejaVu Sans,10"
set output 'docs/img/w3-flow-control.png'
set title "W3: slow consumer (5,000 msg/s for 25 s, then as fast as it can) against a quota of soft 100,000 / hard 200,000 messages"
set xlabel "seconds"
set ylabel "backlog (messages)"
set y2label "rate (msg/s)"
set ytics nomirror
set y2tics
set yrange [0:220000]
set y2range [0:350000]
set key outside bottom center horizontal
set grid
# Slowed seconds shaded
plot 'docs/img/w3-flow-control.dat' using 1:($5==1 ? 220000 : 0) with filledcurves x1 fc rgb "#ffe9a8" fs solid 0.6 title "SLOWED", \
     'docs/img/w3-flow-control.dat' using 1:($5==2 ? 220000 : 0) with filledcurves x1 fc rgb "#f4a6a6" fs solid 0.6 title "BLOCKED", \
     100000 with lines dt 2 lc rgb "#b08000" title "soft quota", \
     200000 with lines dt 2 lc rgb "#b00000" title "hard quota", \
     'docs/img/w3-flow-control.dat' using 1:2 with lines lw 2 lc rgb "#1f4e9c" title "backlog", \
     'docs/img/w3-flow-control.dat' using 1:3 axes x1y2 with lines lw 1.5 lc rgb "#2a9d2a" title "producer rate", \
     'docs/img/w3-flow-control.dat' using 1:4 axes x1y2 with lines lw 1.5 dt 3 lc rgb "#d2691e" title "consumer rate"
