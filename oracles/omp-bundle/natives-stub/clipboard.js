export * from "../../omp/node_modules/@oh-my-pi/pi-natives/native/clipboard.js";
